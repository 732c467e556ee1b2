// highlight.js declares types for its full bundle only; its core (the
// same API without the 190 languages) is what the app imports.
declare module 'highlight.js/lib/core' {
  import type { HLJSApi } from 'highlight.js';
  const hljs: HLJSApi;
  export default hljs;
}
