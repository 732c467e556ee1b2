/**
 * Everything the UI may ask of the backend. Each host implements all of it,
 * so a screen never knows whether it runs inside the desktop app or a test.
 */
export interface Host {
  /** The version of the running Weft app, e.g. `0.1.0`. */
  appVersion(): Promise<string>;
}
