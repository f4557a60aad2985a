// Where a body stops being JSON, without quoting it: V8's JSON.parse messages carry the
// offending text (`Unexpected token '<', "<html>…" is not valid JSON`), and a source's
// body is not annex's to copy into status, where whoever wrote the URL reads it. This
// scans by RFC 8259's grammar, iteratively (a body may nest a million levels).

const isWs = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isHex = (c: number) => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
const ESCAPES = new Set([...'"\\/bfnrtu'].map((ch) => ch.charCodeAt(0)));

/**
 * The index (UTF-16 units) of the first character that makes `text` not JSON, or -1 when
 * it is JSON. The end of the text when it stops early.
 */
export function jsonErrorIndex(text: string): number {
  const n = text.length;
  let i = 0;
  const at = (k: number) => (k < n ? text.charCodeAt(k) : -1);
  const skipWs = () => {
    while (i < n && isWs(text.charCodeAt(i))) i++;
  };
  /** A string at i (an opening quote); false with i at the fault. */
  const string = (): boolean => {
    i++;
    for (;;) {
      const c = at(i);
      if (c === -1 || c < 0x20) return false;
      if (c === 0x22) {
        i++;
        return true;
      }
      if (c === 0x5c) {
        i++;
        if (!ESCAPES.has(at(i))) return false;
        if (at(i) === 0x75) {
          for (let k = 1; k <= 4; k++) {
            if (!isHex(at(i + k))) {
              i += k;
              return false;
            }
          }
          i += 4;
        }
      }
      i++;
    }
  };
  const digits = (): boolean => {
    if (!isDigit(at(i))) return false;
    while (isDigit(at(i))) i++;
    return true;
  };
  const number = (): boolean => {
    if (at(i) === 0x2d) i++;
    if (at(i) === 0x30) i++;
    else if (!digits()) return false;
    if (at(i) === 0x2e) {
      i++;
      if (!digits()) return false;
    }
    if (at(i) === 0x65 || at(i) === 0x45) {
      i++;
      if (at(i) === 0x2b || at(i) === 0x2d) i++;
      if (!digits()) return false;
    }
    return true;
  };
  const literal = (word: string): boolean => {
    for (let k = 0; k < word.length; k++, i++) if (at(i) !== word.charCodeAt(k)) return false;
    return true;
  };
  /** A member's key and colon, i at the key; false with i at the fault. */
  const key = (): boolean => {
    skipWs();
    if (at(i) !== 0x22 || !string()) return false;
    skipWs();
    if (at(i) !== 0x3a) return false;
    i++;
    return true;
  };

  const open: number[] = []; // 0x7b { or 0x5b [
  for (;;) {
    // A value.
    skipWs();
    const c = at(i);
    if (c === 0x7b || c === 0x5b) {
      open.push(c);
      i++;
      skipWs();
      if (at(i) === c + 2) {
        open.pop();
        i++;
      } else {
        if (c === 0x7b && !key()) return i;
        continue;
      }
    } else {
      const ok =
        c === 0x22
          ? string()
          : c === 0x74
            ? literal('true')
            : c === 0x66
              ? literal('false')
              : c === 0x6e
                ? literal('null')
                : c === 0x2d || isDigit(c)
                  ? number()
                  : false;
      if (!ok) return i;
    }
    // After a value: close containers, or a comma and the next value.
    for (;;) {
      skipWs();
      const top = open.at(-1);
      if (top === undefined) return i === n ? -1 : i;
      const d = at(i);
      if (d === top + 2) {
        open.pop();
        i++;
        continue;
      }
      if (d !== 0x2c) return i;
      i++;
      if (top === 0x7b && !key()) return i;
      break;
    }
  }
}

/** The byte offset (UTF-8) of the first fault in a body JSON.parse refused. */
export const jsonErrorByte = (text: string): number =>
  Buffer.byteLength(text.slice(0, Math.max(0, jsonErrorIndex(text))), 'utf8');
