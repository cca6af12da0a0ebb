/** Fixtures of ../shared/reference/signature-vectors.md (reference unit tests, renamed). */
const ADMIN: [string, string] = ['1CbErtneaX2QVyUfwU7JGB7VzvPgrgc3uC', '16125160820394ddsh5skgwv0ipodku92y0jbwvpyj17bh68lzrjlxq9'];
const OWNER: [string, string] = ['1KPKzyp9VyB9ouAA4spZ48x8g32sxLVK6W', '1644935889016mtmbo4uah32tvvwrmzg4j8qzv04ba8g8n56cevn6b'];
const TEAM: [string, string] = ['1NH9BP155Rp3HSf5ef6NpUbE8JcyLRruAM', '1623904359736pja76q7y68deb4264olbml6o8gyhot2yvj5oevgv9k2'];

/** [role, address, message, signature, verifies] from signature-vectors.md. */
export const BITCOIN_VECTORS: [string, string, string, string, boolean][] = [
  ['user', '1E1NSwDHtvCziYP4CtgiDMcgvgZL64PhkR', '162797868130153vt9r89dzjjjfg6kf34ntf1d8aa5zqlk04j3zy8z40ni', 'IIwyGekXKejWRCnBKMb5Zn2ufi5ylnl3r/wmonoTDm7QCUoe5vZL0SXIwqxO7F8U3Q+kUJapRS2xlUe53KNmC9k=', true],
  ['admin', ...ADMIN, 'IH9d68fk/dYQtuMlNN7ioc52MJ6ryRT0IYss6h/KCwVWGcbVNFoI8Jh6hIklRq+w2itV/6vs/xzCWp4TUdSWDBc=', true],
  ['app owner', ...OWNER, 'H7xcWjpSt8jiAaPbkUsfY3ZutJJmI35MWkGsgWBj/fJHfk7ZKRoggzigdaESLGMDMb2MHlxAapr1sMYDbJkL/H4=', true],
  ['core team', ...TEAM, 'H4lWS4PcrR1tMo8RCLzeYYrd042tsJC9PteIKZvn091ZAYE4K9ydfri8M1KKWe905NHdS4LPPsClqvA4nY/G+II=', true],
  ['admin, one character changed', ...ADMIN, 'IH9d68fk/dYQtzMlNN7ioc52MJ6ryRT0IYss6h/KCwVWGcbVNFoI8Jh6hIklRq+w2itV/6vs/xzCWp4TUdSWDBc=', false],
  ['signature by another key', ...OWNER, 'IMDMG1GuDasjPMkrGaRQhkLpFO0saBV+v+N6h3wP6/QlF3J9ymLAPZy7DCBd/RnOSzUxmTHruenVeR7LghzRnHA=', false],
  ['that one, tampered (library throws)', ...OWNER, 'IMDMG1GuDasjPMkrGaRQhkLpFO0saBZ+v+N6h3wP6/QlF3J9ymLAPZy7DCBd/RnOSzUxmTHruenVeR7LghzRnHA=', false],
  ['header byte out of range (library throws)', ...TEAM, 'N4lWS4PcrR1tMo8RCLzeYYrd042tsJC9PteIKZvn091ZAYE4K9ydfri8M1KKWe905NHdS4LPPsClqvA4nY/G+II=', false],
  ['address with a bad checksum', '1KPKzyp9VyB9ouAA4spZ48x8g32sxLVK6a', OWNER[1], 'IMDMG1GuDasjPMkrGaRQhkLpFO0saBV+v+N6h3wP6/QlF3J9ymLAPZy7DCBd/RnOSzUxmTHruenVeR7LghzRnHA=', false],
];

export const ETH = ['0xfaA2cA6454F2815C0900da1d4BfbD53072C736eb', 'testmessage123', '0xaaa09d14433ec40513a4ad70d6945ec8459cad37b7fe3102e443d91210fc5d3847fe0e262043a8b8bbeb33698970ab69dd759ddd52d0f2985b6d80f2e1c119ec1b'];
export const PUBKEY = '0474eb4690689bb408139249eda7f361b7881c4254ccbe303d3b4d58c2b48897d0f070b44944941998551f9ea0e1befd96f13adf171c07c885e62d0c2af56d3dab';
export const PUBKEY_SIG = 'G6wvdaMqtuQYqa5BAtKsLHFCYQwB4PXoTwG0YSGtWU6ude/brDNM5MraSBfT64HU3XPhObGohFjLLo6KjtMgnlc=';
