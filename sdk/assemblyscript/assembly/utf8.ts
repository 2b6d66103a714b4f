// Reef AssemblyScript SDK: UTF-8 checks and decoding for the CBOR reader (cbor.ts). AssemblyScript
// strings are UTF-16; Reef's text is UTF-8, checked as strictly as the host checks it.

/** The offset of the first byte of `len` bytes at `p` that is not part of valid UTF-8
 * (overlongs, surrogates and code points over U+10FFFF are invalid), or -1. */
export function findInvalidUtf8(p: usize, len: usize): isize {
  let i: usize = 0;
  while (i < len) {
    if (i + 4 <= len && !(load<u32>(p + i) & 0x80808080)) { i += 4; continue; }
    const b0 = <u32>load<u8>(p + i);
    if (b0 < 0x80) { i++; continue; }
    let n: usize; // continuation bytes
    let lo: u32 = 0x80, hi: u32 = 0xbf; // range of the first continuation byte
    if (b0 >= 0xc2 && b0 <= 0xdf) n = 1;
    else if (b0 >= 0xe0 && b0 <= 0xef) {
      n = 2;
      if (b0 == 0xe0) lo = 0xa0;
      else if (b0 == 0xed) hi = 0x9f;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      n = 3;
      if (b0 == 0xf0) lo = 0x90;
      else if (b0 == 0xf4) hi = 0x8f;
    } else return <isize>i;
    if (len - i <= n) return <isize>i;
    const b1 = <u32>load<u8>(p + i + 1);
    if (b1 < lo || b1 > hi) return <isize>i;
    for (let k: usize = 2; k <= n; k++) {
      if ((<u32>load<u8>(p + i + k) & 0xc0) != 0x80) return <isize>i;
    }
    i += n + 1;
  }
  return -1;
}

/** The string of the `len` bytes of UTF-8 at `p`, or null when they are not valid UTF-8.
 * ASCII (the usual case) is widened 4 bytes at a time in one pass. */
export function decodeText(p: usize, len: usize): string | null {
  if (len == 0) return "";
  const s = changetype<usize>(__new(len << 1, idof<string>()));
  let i: usize = 0;
  for (; i + 4 <= len; i += 4) {
    const w = load<u32>(p + i);
    if (w & 0x80808080) break;
    store<u32>(s + (i << 1), (w & 0xff) | ((w & 0xff00) << 8));
    store<u32>(s + (i << 1), ((w >> 16) & 0xff) | ((w >> 8) & 0xff0000), 4);
  }
  for (; i < len; i++) {
    const b = <u32>load<u8>(p + i);
    if (b >= 0x80) break;
    store<u16>(s + (i << 1), <u16>b);
  }
  if (i == len) return changetype<string>(s);
  if (findInvalidUtf8(p + i, len - i) >= 0) return null;
  return String.UTF8.decodeUnsafe(p, len);
}
