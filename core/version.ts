/** The node software version the API reports (`/core/version`, OpenAPI). Raised with each release. */
export const VERSION = '8.20.0';
