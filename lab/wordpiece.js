// BERT's uncased WordPiece tokenizer, as the model's own tokenizer.json says
// (BertNormalizer: clean text, space around CJK characters, NFD + strip accents, lowercase;
// BertPreTokenizer: split on whitespace and punctuation; WordPiece with "##", [UNK] for
// words longer than 100 characters or with no split in the vocabulary).
// Checked against the Python tokenizer by tests/book/test_lab_tokenizer.py (run under node).

const isWhitespace = (ch) => ch === " " || ch === "\t" || ch === "\n" || ch === "\r" || /\p{Zs}/u.test(ch);

// Control characters are dropped, except the whitespace ones above.
const isControl = (ch) => {
  if (ch === "\t" || ch === "\n" || ch === "\r") return false;
  return /[\p{Cc}\p{Cf}]/u.test(ch);
};

// ASCII symbols count as punctuation too (e.g. "$", "^", "`"), as in BERT.
const isPunctuation = (ch) => {
  const cp = ch.codePointAt(0);
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) {
    return true;
  }
  return /\p{P}/u.test(ch);
};

const isChinese = (cp) =>
  (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0x3400 && cp <= 0x4dbf) || (cp >= 0x20000 && cp <= 0x2a6df) ||
  (cp >= 0x2a700 && cp <= 0x2b73f) || (cp >= 0x2b740 && cp <= 0x2b81f) || (cp >= 0x2b820 && cp <= 0x2ceaf) ||
  (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0x2f800 && cp <= 0x2fa1f);

export function normalize(text) {
  let out = "";
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    if (cp === 0 || cp === 0xfffd || isControl(ch)) continue;
    if (isWhitespace(ch)) out += " ";
    else if (isChinese(cp)) out += ` ${ch} `;
    else out += ch;
  }
  out = out.normalize("NFD").replace(/\p{Mn}/gu, "");
  // One character at a time, as the Rust tokenizer does: no final-sigma rule ("Σ" → "σ").
  return Array.from(out, (ch) => ch.toLowerCase()).join("");
}

export function preTokenize(normalized) {
  const words = [];
  let current = "";
  for (const ch of normalized) {
    if (isWhitespace(ch)) {
      if (current) words.push(current);
      current = "";
    } else if (isPunctuation(ch)) {
      if (current) words.push(current);
      words.push(ch);
      current = "";
    } else {
      current += ch;
    }
  }
  if (current) words.push(current);
  return words;
}

export class WordPiece {
  /** @param {string} vocabText the contents of vocab.txt, one token per line */
  constructor(vocabText, { unk = "[UNK]", cls = "[CLS]", sep = "[SEP]", maxChars = 100 } = {}) {
    this.vocab = new Map();
    vocabText.split("\n").forEach((line, i) => {
      const token = line.replace(/\r$/, "");
      if (token !== "" || i === 0) this.vocab.set(token, i);
    });
    this.unk = unk;
    this.cls = cls;
    this.sep = sep;
    this.maxChars = maxChars;
  }

  wordPieces(word) {
    const chars = Array.from(word);
    if (chars.length > this.maxChars) return [this.unk];
    const pieces = [];
    let start = 0;
    while (start < chars.length) {
      let end = chars.length;
      let found = null;
      while (start < end) {
        const piece = (start > 0 ? "##" : "") + chars.slice(start, end).join("");
        if (this.vocab.has(piece)) {
          found = piece;
          break;
        }
        end -= 1;
      }
      if (found === null) return [this.unk];
      pieces.push(found);
      start = end;
    }
    return pieces;
  }

  /**
   * Tokens with [CLS] and [SEP], cut to maxLength positions.
   * @returns {{tokens: string[], ids: number[], truncated: number}} truncated: word pieces dropped
   */
  encode(text, maxLength = 512) {
    const pieces = preTokenize(normalize(text)).flatMap((w) => this.wordPieces(w));
    const room = maxLength - 2;
    const kept = pieces.slice(0, room);
    const tokens = [this.cls, ...kept, this.sep];
    return { tokens, ids: tokens.map((t) => this.vocab.get(t)), truncated: pieces.length - kept.length };
  }
}
