// A small syntax highlighter: it walks the text once and rebuilds it as text nodes and
// <span class="tok-…"> elements (textContent only, so highlighting can never inject markup).

import { h } from './dom.js';

/** @typedef {'kw' | 'str' | 'com' | 'num'} TokenKind */
/**
 * @typedef {object} Lang
 * @property {Set<string>} keywords
 * @property {string[]} line        line-comment markers
 * @property {[string, string][]} block  block-comment delimiters
 * @property {string[]} quotes      string delimiters ('"""' before '"')
 * @property {boolean} [caseless]   keywords match in any case (SQL)
 * @property {boolean} [hashAtWord] `#` starts a comment only at the start of a word (shell)
 * @property {boolean} [charLiterals] `'` is a char literal or a lifetime (Rust)
 */

/** Beyond this, a block is shown as plain text: highlighting must never stall the window. */
const MAX_CHARS = 200_000;

/** @param {string} words */
const set = (words) => new Set(words.split(/\s+/).filter(Boolean));

const LITERALS = 'true false null undefined None True False nil NaN Infinity';
const C_LIKE = 'auto break case catch char class const continue default delete do double else enum explicit extern final float for friend goto if inline int long namespace new noexcept nullptr operator override private protected public register return short signed sizeof static struct switch template this throw try typedef typename union unsigned using virtual void volatile while bool true false NULL include define ifdef ifndef endif pragma';

/** @type {Record<string, Lang>} */
const LANGS = {
  js: {
    keywords: set(`async await break case catch class const continue debugger default delete do else export extends finally for from function get if import in instanceof let new of return set static super switch this throw try typeof var void while with yield ${LITERALS}
      as declare enum implements interface keyof namespace private protected public readonly type abstract any boolean number string unknown never satisfies`),
    line: ['//'], block: [['/*', '*/']], quotes: ['`', '"', "'"],
  },
  rust: {
    keywords: set('as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type union unsafe use where while Some None Ok Err i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str String Vec Option Result Box'),
    line: ['//'], block: [['/*', '*/']], quotes: ['"'], charLiterals: true,
  },
  python: {
    keywords: set(`and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case self ${LITERALS}`),
    line: ['#'], block: [], quotes: ['"""', "'''", '"', "'"],
  },
  go: {
    keywords: set('break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var true false nil iota string int int64 int32 uint byte rune error bool float64 any'),
    line: ['//'], block: [['/*', '*/']], quotes: ['`', '"', "'"],
  },
  c: { keywords: set(C_LIKE), line: ['//'], block: [['/*', '*/']], quotes: ['"', "'"] },
  java: {
    keywords: set(`${C_LIKE} abstract assert boolean byte extends implements import instanceof interface package synchronized throws transient var val fun when object data sealed open internal lateinit companion suspend is in out let func guard self init deinit struct protocol extension where`),
    line: ['//'], block: [['/*', '*/']], quotes: ['"""', '"', "'"],
  },
  csharp: {
    keywords: set(`${C_LIKE} abstract as base bool byte checked decimal event fixed foreach implicit in interface internal is lock object out params readonly ref sbyte sealed stackalloc string uint ulong unchecked unsafe ushort var async await get set`),
    line: ['//'], block: [['/*', '*/']], quotes: ['"', "'"],
  },
  shell: {
    keywords: set('if then else elif fi case esac for select while until do done in function time return exit export local readonly declare unset shift source alias echo cd set trap'),
    line: ['#'], block: [], quotes: ['"', "'"], hashAtWord: true,
  },
  json: { keywords: set('true false null'), line: [], block: [], quotes: ['"'] },
  yaml: { keywords: set('true false null yes no on off ~'), line: ['#'], block: [], quotes: ['"', "'"], hashAtWord: true },
  toml: { keywords: set('true false'), line: ['#'], block: [], quotes: ['"""', "'''", '"', "'"] },
  css: { keywords: set('important inherit initial unset none auto'), line: [], block: [['/*', '*/']], quotes: ['"', "'"] },
  html: { keywords: set('DOCTYPE doctype'), line: [], block: [['<!--', '-->']], quotes: ['"', "'"] },
  sql: {
    keywords: set('select from where and or not insert into values update set delete create table drop alter add index primary key foreign references join left right inner outer on as group by order having limit offset distinct union all null is in like between case when then else end exists default unique integer text varchar boolean begin commit rollback'),
    line: ['--'], block: [['/*', '*/']], quotes: ["'", '"'], caseless: true,
  },
  ruby: {
    keywords: set('alias and begin break case class def defined? do else elsif end ensure false for if in module next nil not or redo rescue retry return self super then true undef unless until when while yield require attr_accessor'),
    line: ['#'], block: [], quotes: ['"', "'"],
  },
  lua: {
    keywords: set('and break do else elseif end false for function goto if in local nil not or repeat return then true until while'),
    line: ['--'], block: [], quotes: ['"', "'"],
  },
};

/** @type {Record<string, string>} */
const ALIASES = {
  javascript: 'js', jsx: 'js', mjs: 'js', cjs: 'js', ts: 'js', typescript: 'js', tsx: 'js',
  rs: 'rust', py: 'python', python3: 'python', golang: 'go',
  h: 'c', cpp: 'c', 'c++': 'c', cc: 'c', hpp: 'c', cxx: 'c', objc: 'c',
  kotlin: 'java', kt: 'java', kts: 'java', swift: 'java', scala: 'java', dart: 'java', groovy: 'java',
  cs: 'csharp', 'c#': 'csharp',
  sh: 'shell', bash: 'shell', zsh: 'shell', console: 'shell', shellsession: 'shell', fish: 'shell', dockerfile: 'shell', makefile: 'shell', make: 'shell',
  yml: 'yaml', jsonc: 'json', json5: 'json', scss: 'css', less: 'css',
  xml: 'html', svg: 'html', vue: 'html', svelte: 'html', rb: 'ruby', postgres: 'sql', sqlite: 'sql', mysql: 'sql',
};

/**
 * @param {string} language
 * @returns {Lang | null}
 */
function langFor(language) {
  const key = language.trim().toLowerCase();
  return LANGS[key] ?? LANGS[ALIASES[key] ?? ''] ?? null;
}

const NUMBER = /0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|(?:\d[\d_]*(?:\.\d[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?[a-zA-Z0-9_]*/y;
const IDENT = /[A-Za-z_$][\w$]*\??/y;
const RUST_CHAR = /'(?:\\(?:u\{[0-9a-fA-F]{1,6}\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'/y;

/** @param {string} c */
const isWordChar = (c) => /[\w$]/.test(c);

/**
 * Splits `text` into [kind, text] pieces (kind null for plain text).
 * @param {string} text
 * @param {Lang} lang
 * @returns {Array<[TokenKind | null, string]>}
 */
function tokenize(text, lang) {
  /** @type {Array<[TokenKind | null, string]>} */
  const out = [];
  let plainStart = 0;
  let i = 0;
  /** @param {TokenKind} kind @param {number} end */
  const emit = (kind, end) => {
    if (plainStart < i) out.push([null, text.slice(plainStart, i)]);
    out.push([kind, text.slice(i, end)]);
    i = end;
    plainStart = end;
  };
  outer: while (i < text.length) {
    const c = text[i];
    const prev = i > 0 ? text[i - 1] : '';
    for (const marker of lang.line) {
      if (text.startsWith(marker, i) && (!lang.hashAtWord || prev === '' || /\s/.test(prev))) {
        const nl = text.indexOf('\n', i);
        emit('com', nl < 0 ? text.length : nl);
        continue outer;
      }
    }
    for (const [open, close] of lang.block) {
      if (text.startsWith(open, i)) {
        const end = text.indexOf(close, i + open.length);
        emit('com', end < 0 ? text.length : end + close.length);
        continue outer;
      }
    }
    if (lang.charLiterals && c === "'") {
      RUST_CHAR.lastIndex = i;
      if (RUST_CHAR.test(text)) emit('str', RUST_CHAR.lastIndex);
      else i += 1; // a lifetime: plain text
      continue;
    }
    for (const q of lang.quotes) {
      if (text.startsWith(q, i)) {
        emit('str', stringEnd(text, i, q));
        continue outer;
      }
    }
    if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(text[i + 1] ?? ''))) {
      if (!isWordChar(prev)) {
        NUMBER.lastIndex = i;
        if (NUMBER.test(text)) {
          emit('num', NUMBER.lastIndex);
          continue;
        }
      }
    }
    if (/[A-Za-z_$]/.test(c) && !isWordChar(prev)) {
      IDENT.lastIndex = i;
      if (IDENT.test(text)) {
        let end = IDENT.lastIndex;
        let word = text.slice(i, end);
        if (word.endsWith('?') && !lang.keywords.has(word)) {
          word = word.slice(0, -1);
          end -= 1;
        }
        if (lang.keywords.has(lang.caseless ? word.toLowerCase() : word)) emit('kw', end);
        else i = end;
        continue;
      }
    }
    i += 1;
  }
  if (plainStart < text.length) out.push([null, text.slice(plainStart)]);
  return out;
}

/**
 * Where a string starting at `start` with delimiter `q` ends (exclusive). Single-character
 * quotes other than backticks stop at the end of the line, so one stray quote cannot colour
 * the rest of the file.
 * @param {string} text
 * @param {number} start
 * @param {string} q
 */
function stringEnd(text, start, q) {
  const multiline = q.length === 3 || q === '`';
  let i = start + q.length;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (!multiline && c === '\n') return i;
    if (text.startsWith(q, i)) return i + q.length;
    i += 1;
  }
  return text.length;
}

/**
 * Highlighted `text` as a fragment of text nodes and token spans.
 * @param {string} text
 * @param {string} language
 * @returns {DocumentFragment}
 */
export function highlight(text, language) {
  const frag = document.createDocumentFragment();
  const lang = langFor(language);
  if (!lang || text.length > MAX_CHARS) {
    frag.append(text);
    return frag;
  }
  for (const [kind, piece] of tokenize(text, lang)) {
    frag.append(kind ? h('span', { class: `tok-${kind}`, text: piece }) : piece);
  }
  return frag;
}

/**
 * One line of code (diff views highlight line by line).
 * @param {string} text
 * @param {string} language
 * @returns {DocumentFragment}
 */
export function highlightLine(text, language) {
  return highlight(text, language);
}

/**
 * Highlights every `pre > code` inside `root` (after its safe_html was set) and gives each
 * block a copy button.
 * @param {Element} root
 */
export function highlightCodeIn(root) {
  for (const code of root.querySelectorAll('pre > code')) {
    const pre = code.parentElement;
    if (!pre || pre.parentElement?.classList.contains('code-block')) continue;
    const match = /(?:^|\s)language-(\S+)/.exec(code.className);
    const language = match ? match[1] : '';
    const text = code.textContent ?? '';
    if (language) code.replaceChildren(highlight(text, language));
    pre.tabIndex = 0; // long lines scroll sideways: keyboard users must reach it
    const copy = h('button', { type: 'button', class: 'copy-code', 'aria-label': 'Copy code', text: 'Copy' });
    copy.addEventListener('click', () => copyText(copy, text));
    const wrapper = h('div', { class: 'code-block' },
      language ? h('span', { class: 'code-lang', text: language }) : null,
      copy);
    pre.replaceWith(wrapper);
    wrapper.append(pre);
  }
}

/**
 * @param {HTMLButtonElement} button
 * @param {string} text
 */
async function copyText(button, text) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
    setTimeout(() => { button.textContent = 'Copy'; }, 1500);
  } catch {
    // The clipboard may be unavailable to the webview; the text can still be selected by hand.
  }
}
