// Syntax highlighting of the file view, our own small
// tokenizer (no library, no build step). Each language is one regular
// expression of alternatives, one per kind of token (comment, string,
// number, keyword, …), matched left to right; the text between matches
// stays plain. Tokens become <span class="hl-KIND"> holding a text node
// (dom.js), so no byte of a file is ever parsed as markup. It colours, it does
// not parse: a construct the expression misreads is only coloured wrong.
import { el } from './dom.js';

const HL_MAX = 512 << 10; // characters highlighted; a longer text is shown plain

const hlWords = (s) => '\\b(?:' + s.trim().split(/\s+/).join('|') + ')\\b';
const hlNum = '\\b(?:0[xXbBoO][\\da-fA-F_]+|\\d[\\d_]*(?:\\.[\\d_]+)?(?:[eE][+-]?\\d+)?)\\b';
const hlDQ = '"(?:\\\\.|[^"\\\\\\n])*"';
const hlSQ = "'(?:\\\\.|[^'\\\\\\n])*'";
const hlSlashComment = '//[^\\n]*|/\\*[\\s\\S]*?\\*/';

// Each language: [kind, pattern] in the order they are tried at a place.
const HL_LANGS = {
  go: [['c', hlSlashComment], ['s', hlDQ + '|' + hlSQ + '|`[^`]*`'], ['n', hlNum],
    ['k', hlWords('break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false iota')]],
  py: [['c', '#[^\\n]*'], ['s', '"""[\\s\\S]*?"""|\'\'\'[\\s\\S]*?\'\'\'|' + hlDQ + '|' + hlSQ], ['n', hlNum],
    ['k', hlWords('and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield None True False self')]],
  js: [['c', hlSlashComment], ['s', hlDQ + '|' + hlSQ + '|`(?:\\\\.|[^`\\\\])*`'], ['n', hlNum],
    ['k', hlWords('async await break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof interface let new of return static super switch this throw try type typeof var void while with yield null undefined true false enum implements private public protected readonly')]],
  json: [['h', hlDQ + '(?=\\s*:)'], ['s', hlDQ], ['n', '-?' + hlNum], ['k', hlWords('true false null')]],
  sh: [['c', '(?:^|(?<=\\s))#[^\\n]*'], ['s', hlDQ + "|'[^']*'"], ['v', '\\$(?:\\{[^}\\n]*\\}|[A-Za-z_]\\w*|[0-9#?@*$!-])'],
    ['k', hlWords('if then else elif fi for while until do done case esac in function return local export readonly set unset shift exit break continue trap source')]],
  yaml: [['c', '(?:^|(?<=\\s))#[^\\n]*'], ['h', '^[ \\t-]*[\\w./-]+(?=:(?:\\s|$))'], ['s', hlDQ + '|' + hlSQ], ['n', '-?' + hlNum],
    ['k', hlWords('true false null yes no on off')]],
  md: [['c', '^```[\\s\\S]*?^```[^\\n]*'], ['h', '^#{1,6} [^\\n]*'], ['s', '`[^`\\n]+`'], ['k', '\\*\\*[^*\\n]+\\*\\*|__[^_\\n]+__'],
    ['v', '\\[[^\\]\\n]*\\]\\([^)\\n]*\\)']],
  c: [['c', hlSlashComment], ['p', '^[ \\t]*#[ \\t]*\\w+[^\\n]*'], ['s', hlDQ + '|' + hlSQ], ['n', hlNum + '[uUlLfF]*'],
    ['k', hlWords('auto break case char const continue default do double else enum extern float for goto if inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while bool true false NULL nullptr class namespace template typename public private protected virtual new delete this using')]],
};

const HL_EXT = {
  go: 'go', py: 'py', pyi: 'py', js: 'js', mjs: 'js', cjs: 'js', jsx: 'js', ts: 'js', tsx: 'js', mts: 'js',
  json: 'json', sh: 'sh', bash: 'sh', zsh: 'sh', yaml: 'yaml', yml: 'yaml', md: 'md', markdown: 'md',
  c: 'c', h: 'c', cc: 'c', cpp: 'c', cxx: 'c', hpp: 'c', hh: 'c',
};

const hlCompiled = {};

// hlLanguage is the language of path by its extension (a file named
// Makefile or Dockerfile is not one of them), or ''.
export function hlLanguage(path) {
  const m = /\.([A-Za-z0-9]+)$/.exec(path);
  return (m && HL_EXT[m[1].toLowerCase()]) || '';
}

function hlRegexp(lang) {
  if (!hlCompiled[lang]) {
    hlCompiled[lang] = {
      re: new RegExp(HL_LANGS[lang].map(([, p]) => '(' + p + ')').join('|'), 'gm'),
      kinds: HL_LANGS[lang].map(([k]) => k),
    };
  }
  return hlCompiled[lang];
}

// highlight is text as a fragment of text nodes and coloured spans, or
// null when path's language is not known or the text is too long.
export function highlight(path, text) {
  const lang = hlLanguage(path);
  if (!lang || text.length > HL_MAX) return null;
  const { re, kinds } = hlRegexp(lang);
  const frag = document.createDocumentFragment();
  let at = 0;
  re.lastIndex = 0;
  for (let m; (m = re.exec(text)) !== null;) {
    if (m[0] === '') { re.lastIndex++; continue; }
    if (m.index > at) frag.append(text.slice(at, m.index));
    frag.append(el('span', 'hl-' + kinds[m.slice(1).findIndex((g) => g !== undefined)], m[0]));
    at = m.index + m[0].length;
  }
  if (at < text.length) frag.append(text.slice(at));
  return frag;
}
