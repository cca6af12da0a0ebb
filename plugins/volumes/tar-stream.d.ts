// tar-stream 2.x ships no types; the part of its API this plugin uses.
declare module 'tar-stream' {
  const tar: { pack(): any; extract(): any };
  export default tar;
}
