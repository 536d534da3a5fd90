// Text that came from outside (a file's rows, a file name, an exchange's answer, an argument) is
// shown to people on a terminal. Control characters in it would be obeyed by the terminal: ESC
// sequences recolour, move the cursor or retitle the window, CR overwrites the line before it,
// a newline forges a line of output, bidirectional overrides reorder what is read. Every message
// that quotes such text passes it through here, so it is shown, never obeyed.

// C0 controls (newline and tab included), DEL, C1 controls, zero-width and bidirectional format
// characters, the Unicode line and paragraph separators, the byte-order mark, and (the
// pattern reads code points) surrogates that are not part of a pair.
const UNPRINTABLE =
  // eslint-disable-next-line no-control-regex -- control characters are what it finds
  /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]/gu;

function escape(char: string): string {
  const code = char.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** `text` with every character a terminal would act on written as a visible escape (`\x1b`). */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, escape);
}

/** The same for a message of several lines: its own line breaks stay, everything else is escaped. */
export function printableLines(text: string): string {
  return text.split('\n').map(printable).join('\n');
}
