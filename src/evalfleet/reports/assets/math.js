// TeX math as MathML, which Chromium, Firefox and Safari draw themselves (MathML Core): the
// subset models write in answers, written here so the report stays one offline file with no
// dependency. Numbers, letters, operators, ^ and _, \frac, \sqrt (and [n]), \left \right,
// \sum \prod \int with limits, greek letters, relations, \not, \text \operatorname and the
// \math fonts (rm bf bb cal frak sf tt), \boxed, accents, braces, \overset, \xrightarrow,
// \binom and matrices. A command it does not know is shown as written, in an <mtext>; every
// text is escaped, so nothing in a formula becomes markup.
"use strict";

const TEX_GREEK = "alpha α beta β gamma γ delta δ epsilon ϵ varepsilon ε zeta ζ eta η theta θ " +
  "vartheta ϑ iota ι kappa κ lambda λ mu μ nu ν xi ξ pi π varpi ϖ rho ρ varrho ϱ sigma σ " +
  "varsigma ς tau τ upsilon υ phi ϕ varphi φ chi χ psi ψ omega ω ell ℓ hbar ℏ";
const TEX_GREEK_UPPER = "Gamma Γ Delta Δ Theta Θ Lambda Λ Xi Ξ Pi Π Sigma Σ Upsilon Υ Phi Φ " +
  "Psi Ψ Omega Ω";
const TEX_IDENT = "infty ∞ partial ∂ nabla ∇ emptyset ∅ varnothing ∅ aleph ℵ Re ℜ Im ℑ";
const TEX_OPS = "cdot ⋅ times × div ÷ pm ± mp ∓ le ≤ leq ≤ ge ≥ geq ≥ neq ≠ ne ≠ approx ≈ " +
  "equiv ≡ sim ∼ simeq ≃ cong ≅ propto ∝ ll ≪ gg ≫ lt < gt > to → rightarrow → leftarrow ← " +
  "Rightarrow ⇒ Leftarrow ⇐ iff ⟺ implies ⟹ leftrightarrow ↔ Leftrightarrow ⇔ mapsto ↦ " +
  "circ ∘ bullet ∙ ast ∗ star ⋆ in ∈ notin ∉ ni ∋ subset ⊂ subseteq ⊆ supset ⊃ supseteq ⊇ " +
  "cup ∪ cap ∩ setminus ∖ wedge ∧ land ∧ vee ∨ lor ∨ neg ¬ lnot ¬ forall ∀ exists ∃ " +
  "angle ∠ perp ⊥ parallel ∥ mid ∣ triangle △ degree ° prime ′ ldots … cdots ⋯ dots … " +
  "vdots ⋮ ddots ⋱ therefore ∴ because ∵ oplus ⊕ otimes ⊗ langle ⟨ rangle ⟩ " +
  "lfloor ⌊ rfloor ⌋ lceil ⌈ rceil ⌉ vert | Vert ‖ colon :";
const TEX_BIG = "sum ∑ prod ∏ coprod ∐ bigcup ⋃ bigcap ⋂ int ∫ iint ∬ iiint ∭ oint ∮";
const TEX_FUNCS = "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln lg exp " +
  "max min sup inf lim liminf limsup det gcd lcm deg dim ker arg Pr mod";
// (a font stretches no accent over several letters: \widehat is \hat; a line is a CSS border)
const TEX_ACCENTS = "hat ^ widehat ^ bar ‾ vec → tilde ~ widetilde ~ dot ˙ ddot ¨";
const TEX_SPACES = { ",": "0.1667em", ":": "0.2222em", ">": "0.2222em", ";": "0.2778em",
  "!": "-0.1667em", " ": "0.25em", quad: "1em", qquad: "2em", enspace: "0.5em" };
const TEX_ESCAPED = { "{": "{", "}": "}", "|": "‖", "%": "%", "$": "$", "&": "&", "#": "#", _: "_" };
const TEX_MATRICES = { matrix: ["", ""], pmatrix: ["(", ")"], bmatrix: ["[", "]"],
  Bmatrix: ["{", "}"], vmatrix: ["|", "|"], Vmatrix: ["‖", "‖"], cases: ["{", ""],
  aligned: ["", ""], array: ["", ""] };

function texTable(words) {
  const table = {};
  const parts = words.split(" ");
  for (let i = 0; i + 1 < parts.length; i += 2) table[parts[i]] = parts[i + 1];
  return table;
}
const TEX = {
  greek: texTable(TEX_GREEK), upper: texTable(TEX_GREEK_UPPER), ident: texTable(TEX_IDENT),
  ops: texTable(TEX_OPS), big: texTable(TEX_BIG), accents: texTable(TEX_ACCENTS),
  funcs: new Set(TEX_FUNCS.split(" ")),
};

// Unicode's mathematical letters and digits for \mathbf, \mathbb, \mathcal, \mathfrak,
// \mathsf and \mathtt: where each alphabet's A and 0 are, and its letters outside the block.
const TEX_FONTS = {
  bf: [0x1d400, 0x1d7ce, {}],
  bb: [0x1d538, 0x1d7d8, { C: "ℂ", H: "ℍ", N: "ℕ", P: "ℙ", Q: "ℚ", R: "ℝ", Z: "ℤ" }],
  cal: [0x1d49c, null, { B: "ℬ", E: "ℰ", F: "ℱ", H: "ℋ", I: "ℐ", L: "ℒ", M: "ℳ", R: "ℛ", e: "ℯ",
    g: "ℊ", o: "ℴ" }],
  frak: [0x1d504, null, { C: "ℭ", H: "ℌ", I: "ℑ", R: "ℜ", Z: "ℨ" }],
  sf: [0x1d5a0, 0x1d7e2, {}],
  tt: [0x1d670, 0x1d7f6, {}],
};
function texStyled(style, ch) {
  const [letters, digits, holes] = TEX_FONTS[style];
  if (holes[ch]) return holes[ch];
  if (ch >= "A" && ch <= "Z") return String.fromCodePoint(letters + ch.charCodeAt(0) - 65);
  if (ch >= "a" && ch <= "z") return String.fromCodePoint(letters + 26 + ch.charCodeAt(0) - 97);
  if (ch >= "0" && ch <= "9" && digits) return String.fromCodePoint(digits + Number(ch));
  return ch;
}

class TexError extends Error {}
const TEX_COMMAND = /\\([A-Za-z]+|.)/ys;

// One formula's parser: `src` is the TeX between the delimiters.
class TexParser {
  constructor(src, display) {
    this.src = src;
    this.at = 0;
    this.display = display;
    this.font = ""; // "", "rm", "bf" or "bb" inside \mathrm{}, \mathbf{}, \mathbb{}
  }

  peek() {
    while (this.at < this.src.length && /\s/.test(this.src[this.at])) this.at++;
    return this.src[this.at];
  }

  command() {
    TEX_COMMAND.lastIndex = this.at;
    const m = TEX_COMMAND.exec(this.src);
    if (!m) throw new TexError("a lone backslash");
    this.at += m[0].length;
    return m[1];
  }

  // Whether the next command is \`name` (not a longer one it begins).
  next(name) {
    return this.src.startsWith(`\\${name}`, this.at) && !/[A-Za-z]/.test(this.src[this.at + name.length + 1] ?? "");
  }

  // Atoms until `}`, the end, \right, or (in a table) & and \\.
  list(inTable = false) {
    const out = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === "}") break;
      if (inTable && c === "&") break;
      if (this.next("right") || this.next("end")) break;
      if (inTable && this.src.startsWith("\\\\", this.at)) break;
      out.push(this.scripted());
    }
    return out;
  }

  group() {
    if (this.peek() !== "{") return this.atom(true);
    this.at++;
    const inner = this.list();
    if (this.peek() !== "}") throw new TexError("a { without its }");
    this.at++;
    return texRow(inner);
  }

  scripted() {
    const base = this.atom(false);
    let sub = null;
    const sup = [];
    for (let c = this.peek(); c === "^" || c === "_" || c === "'"; c = this.peek()) {
      this.at++;
      if (c === "'") sup.push("<mo>′</mo>");
      else if (c === "^") sup.push(this.group());
      else sub = this.group();
    }
    // a function's name (sin, log) stands a thin space from what it applies to, as in TeX
    const gap = /^<mi[^>]* data-fn=""/.test(base) && this.peek() !== "(" && !this.next("left");
    const after = gap ? '<mspace width="0.1667em"></mspace>' : "";
    if (sub === null && !sup.length) return base + after;
    const limits = /^<m\w+ data-limits="1"/.test(base) || (this.display && /^<m[oi] data-limits=""/.test(base));
    const tags = limits ? ["munder", "mover", "munderover"] : ["msub", "msup", "msubsup"];
    if (!sup.length) return `<${tags[0]}>${base}${sub}</${tags[0]}>${after}`;
    if (sub === null) return `<${tags[1]}>${base}${texRow(sup)}</${tags[1]}>${after}`;
    return `<${tags[2]}>${base}${sub}${texRow(sup)}</${tags[2]}>${after}`;
  }

  // One atom; `script` when it is the argument of ^ or _ written without braces (one digit).
  atom(script) {
    const c = this.peek();
    if (c === undefined) throw new TexError("a formula that ends too soon");
    if (c === "\\") return this.control();
    if (c === "{") return this.group();
    if (c === "}" || c === "^" || c === "_" || c === "&") throw new TexError(`a stray ${c}`);
    this.at++;
    if (/[0-9.]/.test(c)) {
      let number = c;
      while (!script && /[0-9]/.test(this.src[this.at] ?? "")) number += this.src[this.at++];
      while (!script && this.src[this.at] === "." && /[0-9]/.test(this.src[this.at + 1] ?? "")) {
        number += this.src.slice(this.at, this.at + 2);
        this.at += 2;
        while (/[0-9]/.test(this.src[this.at] ?? "")) number += this.src[this.at++];
      }
      return number === "." ? "<mo>.</mo>" : `<mn>${texText(this.font, number)}</mn>`;
    }
    if (/[A-Za-z]/.test(c)) return this.letter(c);
    if (c === "~") return '<mspace width="0.25em"></mspace>';
    if (c === "-") return "<mo>−</mo>";
    if (c === "*") return "<mo>∗</mo>";
    return texOp(c);
  }

  letter(c) {
    if (this.font === "rm") {
      let word = c;
      while (/[A-Za-z]/.test(this.src[this.at] ?? "")) word += this.src[this.at++];
      return word.length === 1 ? `<mi mathvariant="normal">${word}</mi>` : `<mi>${word}</mi>`;
    }
    if (this.font) return `<mi>${texStyled(this.font, c)}</mi>`;
    return `<mi>${c}</mi>`;
  }

  argument() {
    if (this.peek() !== "{") return this.atom(true);
    return this.group();
  }

  raw() { // the text of a {...} argument, as written (for \text and \begin)
    if (this.peek() !== "{") throw new TexError("an argument without its { }");
    let depth = 0;
    const start = ++this.at;
    for (; this.at < this.src.length; this.at++) {
      const c = this.src[this.at];
      if (c === "\\") this.at++;
      else if (c === "{") depth++;
      else if (c === "}" && depth-- === 0) return this.src.slice(start, this.at++);
    }
    throw new TexError("a { without its }");
  }

  delimiter() {
    const c = this.peek();
    if (c === undefined) throw new TexError("\\left or \\right without its delimiter");
    if (c !== "\\") {
      this.at++;
      return c === "." ? "" : `<mo>${esc(c)}</mo>`;
    }
    const name = this.command();
    const glyph = TEX_ESCAPED[name] ?? TEX.ops[name];
    if (glyph === undefined) throw new TexError(`\\${name} as a delimiter`);
    return `<mo>${esc(glyph)}</mo>`;
  }

  control() {
    const start = this.at;
    const name = this.command();
    if (name === "\\") return '<mspace linebreak="newline"></mspace>';
    if (name in TEX_SPACES) return `<mspace width="${TEX_SPACES[name]}"></mspace>`;
    if (name in TEX_ESCAPED) return texOp(TEX_ESCAPED[name]);
    if (name in TEX.greek) return `<mi>${TEX.greek[name]}</mi>`;
    if (name in TEX.upper) return `<mi mathvariant="normal">${TEX.upper[name]}</mi>`;
    if (name in TEX.ident) return `<mi>${TEX.ident[name]}</mi>`;
    if (name in TEX.ops) return texOp(TEX.ops[name]);
    if (name in TEX.big) {
      const limits = name.includes("int") ? "" : ' data-limits=""';
      return `<mo${limits}>${TEX.big[name]}</mo>`;
    }
    if (TEX.funcs.has(name)) {
      const limits = ["lim", "max", "min", "sup", "inf", "liminf", "limsup", "det", "gcd", "Pr"];
      return `<mi${limits.includes(name) ? ' data-limits=""' : ""} data-fn="">${name}</mi>`;
    }
    if (name in TEX.accents) {
      const base = this.argument();
      return `<mover accent="true">${base}<mo>${esc(TEX.accents[name])}</mo></mover>`;
    }
    switch (name) {
      case "frac": case "dfrac": case "tfrac":
        return `<mfrac>${this.argument()}${this.argument()}</mfrac>`;
      case "binom": {
        const [n, k] = [this.argument(), this.argument()];
        return `<mrow><mo>(</mo><mfrac linethickness="0">${n}${k}</mfrac><mo>)</mo></mrow>`;
      }
      case "sqrt": {
        if (this.peek() === "[") {
          const close = this.src.indexOf("]", this.at);
          if (close < 0) throw new TexError("\\sqrt[ without its ]");
          const index = texToMathML(this.src.slice(this.at + 1, close), false, true);
          this.at = close + 1;
          return `<mroot>${this.argument()}${index}</mroot>`;
        }
        return `<msqrt>${texUnrow(this.argument())}</msqrt>`;
      }
      case "left": {
        const open = this.delimiter();
        const inner = this.list();
        this.peek();
        if (!this.next("right")) throw new TexError("\\left without its \\right");
        this.command();
        return `<mrow>${open}${inner.join("")}${this.delimiter()}</mrow>`;
      }
      case "big": case "Big": case "bigg": case "Bigg": case "bigl": case "bigr":
      case "Bigl": case "Bigr":
        return this.delimiter();
      case "text": case "textrm": case "textit": case "textbf": case "mbox":
        return `<mtext>${esc(this.raw().replace(/\\([{}$%&#_ ])/g, "$1"))}</mtext>`;
      case "mathrm": case "operatorname": case "mathbf": case "boldsymbol": case "mathbb":
      case "mathcal": case "mathfrak": case "mathsf": case "mathtt": {
        const font = this.font;
        this.font = { mathrm: "rm", operatorname: "rm", mathbf: "bf", boldsymbol: "bf" }[name] ??
          name.slice(4);
        const inner = this.argument();
        this.font = font;
        return inner;
      }
      case "mathit": case "displaystyle": case "textstyle": case "limits": case "nolimits":
        return "<mrow></mrow>";
      case "overbrace": case "underbrace": { // its label, as a limit, over or under it
        const [tag, brace] = name === "overbrace" ? ["mover", "⏞"] : ["munder", "⏟"];
        const body = this.argument();
        return `<${tag} data-limits="1">${body}<mo stretchy="true">${brace}</mo></${tag}>`;
      }
      case "overset": case "stackrel": case "underset": {
        const [mark, base] = [this.argument(), this.argument()];
        const tag = name === "underset" ? "munder" : "mover";
        return `<${tag}>${base}${mark}</${tag}>`;
      }
      case "xrightarrow": case "xleftarrow":
        return `<mover><mo stretchy="true">${name === "xrightarrow" ? "→" : "←"}</mo>` +
          `${this.argument()}</mover>`;
      case "not": { // the relation after it, struck through (\not= is ≠)
        const next = this.atom(true);
        const m = /^<mo>([^<]+)<\/mo>$/.exec(next);
        return m ? `<mo>${(m[1] + "\u0338").normalize("NFC")}</mo>` : `<mtext>\\not</mtext>${next}`;
      }
      case "overline": case "underline": {
        const side = name === "overline" ? "top" : "bottom";
        return `<mrow style="border-${side}: 1px solid; padding-${side}: 1px">${this.argument()}</mrow>`;
      }
      case "boxed":
        return `<mrow style="border: 1px solid; padding: 2px 4px">${this.argument()}</mrow>`;
      case "begin":
        return this.environment(start);
      default:
        return `<mtext>${esc(this.src.slice(start, this.at))}</mtext>`;
    }
  }

  environment(start) {
    const env = this.raw();
    const fences = TEX_MATRICES[env];
    if (!fences) return `<mtext>${esc(this.src.slice(start, this.at))}</mtext>`;
    if (env === "array" && this.peek() === "{") this.raw(); // its column spec
    const rows = [];
    let row = [];
    for (;;) {
      row.push(`<mtd>${this.list(true).join("")}</mtd>`);
      if (this.src[this.at] === "&") {
        this.at++;
      } else if (this.src.startsWith("\\\\", this.at)) {
        this.at += 2;
        rows.push(row);
        row = [];
      } else if (this.next("end")) {
        this.command();
        if (this.raw() !== env) throw new TexError(`\\begin{${env}} without its \\end`);
        break;
      } else {
        throw new TexError(`\\begin{${env}} without its \\end`);
      }
    }
    if (row.length > 1 || row[0] !== "<mtd></mtd>") rows.push(row);
    const table = `<mtable>${rows.map((r) => `<mtr>${r.join("")}</mtr>`).join("")}</mtable>`;
    const [open, close] = fences.map((f) => (f ? `<mo>${esc(f)}</mo>` : ""));
    return `<mrow>${open}${table}${close}</mrow>`;
  }
}

function texText(font, text) {
  return font && font !== "rm" ? [...text].map((d) => texStyled(font, d)).join("") : text;
}

// An operator; a bracket written without \left or \right keeps its size, as in TeX.
function texOp(glyph) {
  return "()[]{}|‖⟨⟩⌊⌋⌈⌉".includes(glyph) ? `<mo stretchy="false">${esc(glyph)}</mo>` : `<mo>${esc(glyph)}</mo>`;
}

function texRow(items) {
  return items.length === 1 ? items[0] : `<mrow>${items.join("")}</mrow>`;
}

function texUnrow(mathml) {
  return mathml.startsWith("<mrow>") && mathml.endsWith("</mrow>") ? mathml.slice(6, -7) : mathml;
}

// The MathML of a formula (`display`: set apart, limits under and over); null when it is not
// TeX this subset reads (a { without its }, a \left without \right), for the caller to show the
// text as written. `bare`: the formula's row without its <math>.
function texToMathML(src, display = false, bare = false) {
  const parser = new TexParser(String(src), display);
  let items;
  try {
    items = parser.list();
    if (parser.peek() !== undefined) throw new TexError(`a stray ${parser.peek()}`);
  } catch (error) { // TeX this subset cannot read, or nested too deep for the stack
    if (bare) throw error;
    return null;
  }
  const unmarked = (mathml) => mathml.replace(/ data-(?:limits|fn)="1?"/g, "");
  const body = unmarked(items.join(""));
  if (bare) return unmarked(texRow(items));
  return display ? `<math display="block">${body}</math>` : `<math>${body}</math>`;
}
