import type { Host } from './host';

/**
 * The version the test host reports. Deliberately not a real release number,
 * so a test that sees it knows the page talked to the test host.
 */
export const TEST_APP_VERSION = '0.0.0-test';

/** A backend of fixed fixtures, used when the UI runs in a plain browser. */
export const testHost: Host = {
  appVersion: () => Promise.resolve(TEST_APP_VERSION),
};
