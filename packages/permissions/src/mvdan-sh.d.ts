// mvdan-sh ships no types; command.ts describes the part of its API it uses.
declare module 'mvdan-sh' {
  const sh: { syntax: unknown }
  export default sh
}
