#!/usr/bin/env python3
"""Differential round-trip driver: PersistentPrefs' suite writes against Python's plistlib.

An outside tester's check that a write through the library keeps every value another program
put in a suite file. For each generated document it

1. builds a random top-level dictionary (str, int, float, bool, bytes, datetime, lists and
   dicts nested up to depth 6, empty and odd keys),
2. writes it as an XML property list in a random subset of the formatting variations other
   writers and hand edits use (comments, processing instructions, CDATA, character and named
   references, CR/CRLF line ends, odd real and integer spellings, BOM, ...), or as a binary
   property list with plistlib, and re-reads that document with plistlib to be sure the
   variation kept the value (a variation that does not is dropped),
3. stores it as $XDG_CONFIG_HOME/<SUITE>.plist in a fresh folder and runs
   `prefs-harness defaults write SUITE probe -int 7` there,
4. if the harness succeeded: reads the rewritten file with plistlib and requires `probe` to be
   the integer 7 and every other key to be identical to plistlib's reading of the original
   (exact types, float bit patterns, strings code point for code point, bytes, dates, nesting);
   if it refused (exit status > 0): requires the file to be byte-identical to what was written.

Usage:
    python3 Tests/Differential/plist_roundtrip.py --harness PATH [--count N]
        [--binary-count M] [--seed S] [--keep-failures DIR] [--plain] [--jobs J]
        [--only xml:I|bin:I] [--show K]
    python3 Tests/Differential/plist_roundtrip.py --emit-corpus PATH [--count N] [--seed S]

--plain writes every document exactly as plistlib.dumps does and leaves out -0.0, inf, nan,
U+FEFF and CR: a failure then can only be the library changing an ordinary value.

Standard library only. The last line printed is `N passed, N failed`; the exit status is 1
when anything failed.
"""

import argparse
import base64
import binascii
import collections
import concurrent.futures
import datetime
import json
import math
import os
import plistlib
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import unicodedata

SUITE = "com.example.roundtrip"
PROBE = "probe"
TIMEOUT = 20
EPOCH_1970 = datetime.datetime(1970, 1, 1)
DATE_MIN = datetime.datetime(1, 1, 1)
DATE_MAX = datetime.datetime(9999, 12, 31, 23, 59, 59)
FEFF = "\ufeff"


# --------------------------------------------------------------------------------------------
# Values


class Sizes:
    """How big generated trees get."""

    def __init__(self, top_keys, keys, items, string, data, depth=6, container=0.35):
        self.top_keys = top_keys      # most keys in the top-level dict
        self.keys = keys              # most keys in a nested dict
        self.items = items            # most items in an array
        self.string = string          # most pieces in a string
        self.data = data              # most bytes in a data value
        self.depth = depth            # deepest nesting of containers below the top dict
        self.container = container    # chance that a value is a container (falls with depth)


RUN_SIZES = Sizes(top_keys=12, keys=6, items=6, string=8, data=64)
CORPUS_SIZES = Sizes(top_keys=8, keys=5, items=5, string=6, data=24, container=0.3)

WORDS = ["a", "key", "value", "Hello", "x1", "ZZ", "0", "42", "true", "nil", "path/to",
         "com.example", "über", "naïve", "ß", "中文", "日本", "Ωmega", "ℕ", "a b", "--", "?>",
         "a-b", "#", "%s", "\\", "{ }", "( )", "=;", "\u00a0", "\u2028", "\ufffd"]
SPECIAL = ["<", "&", ">", '"', "'", "]]>", "]]", "]", "<![CDATA[", "&amp;", "&#65;",
           "\t", "\n", " ", "  "]
NON_BMP = ["\U0001F600", "\U0001F4A9", "\U00010348", "\U0001D11E", "\U0010FFFD", "\U00020000"]
WHITESPACE_KEYS = [" ", "  ", "\t", "\n", " \t\n ", "\n\n"]


def _bits(x):
    return struct.unpack(">Q", struct.pack(">d", x))[0]


def _from_bits(b):
    return struct.unpack(">d", struct.pack(">Q", b))[0]


VALUE_FEATURES = ["values:feff", "values:cr", "values:special_reals"]


class ValueGen:
    """A random top-level dictionary.

    Each document draws which hard values it may hold (`features`): U+FEFF in strings and keys,
    CR in strings and keys, and the reals -0.0, inf, -inf and nan. `plain` draws none of them.
    """

    def __init__(self, rng, sizes, plain=False):
        self.rng = rng
        self.sizes = sizes
        self.plain = plain
        self.feff = not plain and rng.random() < 0.45
        self.cr = not plain and rng.random() < 0.4
        self.special_reals = not plain and rng.random() < 0.5
        self.features = [name for name, on in zip(
            VALUE_FEATURES, (self.feff, self.cr, self.special_reals)) if on]

    def top(self):
        return self.dictionary(0, self.rng.randint(1, self.sizes.top_keys), top=True)

    def value(self, depth):
        rng = self.rng
        if depth < self.sizes.depth and rng.random() < self.sizes.container * (1 - depth / 8):
            if rng.random() < 0.5:
                return self.dictionary(depth + 1, rng.randint(0, self.sizes.keys))
            return [self.value(depth + 1) for _ in range(rng.randint(0, self.sizes.items))]
        kind = rng.choice(["string", "string", "integer", "real", "bool", "data", "date"])
        return getattr(self, kind)()

    def dictionary(self, depth, count, top=False):
        d = {}
        seen = set()
        for _ in range(count * 3):
            if len(d) >= count:
                break
            k = self.key()
            nfd = unicodedata.normalize("NFD", k)
            # Unique as Python sees keys and as Swift's canonical-equivalence String == does.
            if nfd in seen or (top and k == PROBE):
                continue
            seen.add(nfd)
            d[k] = self.value(depth)
        return d

    def key(self):
        rng = self.rng
        r = rng.random()
        if r < 0.08:
            return ""
        if r < 0.15:
            return rng.choice(WHITESPACE_KEYS)
        if r < 0.27 and self.feff:
            base = self.string(short=True)
            where = rng.randrange(3)
            if where == 0:
                return FEFF + base
            if where == 1:
                return base + FEFF
            cut = rng.randint(0, len(base))
            return base[:cut] + FEFF + base[cut:]
        return self.string(short=True)

    def string(self, short=False):
        rng = self.rng
        n = rng.randint(0, 3 if short else self.sizes.string)
        parts = []
        for _ in range(n):
            r = rng.random()
            if r < 0.45:
                parts.append(rng.choice(WORDS))
            elif r < 0.7:
                parts.append(rng.choice(SPECIAL))
            elif r < 0.82:
                parts.append(rng.choice(NON_BMP))
            elif r < 0.92 and self.feff:
                parts.append(FEFF)
            elif r >= 0.92 and self.cr:
                parts.append(rng.choice(["\r", "\r\n", "a\rb"]))
            else:
                parts.append(rng.choice(WORDS))
        s = "".join(parts)
        if self.feff and not short and rng.random() < 0.15:
            where = rng.randrange(3)
            s = FEFF + s if where == 0 else s + FEFF if where == 1 else \
                s[: len(s) // 2] + FEFF + s[len(s) // 2:]
        return s

    def integer(self):
        rng = self.rng
        r = rng.random()
        if r < 0.3:
            return rng.choice([0, 1, -1, 7, 2**63 - 1, -2**63, 2**63, 2**64 - 1, 2**32,
                               -2**31, 255, 0x1F, -(2**63 - 1)])
        if r < 0.6:
            return rng.randint(-1000, 1000)
        if r < 0.8:
            return rng.randint(-2**31, 2**32)
        return rng.randint(-2**63, 2**64 - 1)

    def real(self):
        rng = self.rng
        r = rng.random()
        if r < 0.3 and self.special_reals:
            return rng.choice([-0.0, float("inf"), float("-inf"), float("nan")])
        if r < 0.5:
            return rng.choice([0.0, 0.5, -0.5, 1.0, 3.0, -2.0, 1e16, 1e-7, 123.456, 0.1,
                               1e308, -1e308, 1.7976931348623157e308, 2.2250738585072014e-308,
                               5e-324, -5e-324, 2.5e-320, 9007199254740993.0, 1e22, 1e23])
        if r < 0.6:
            return _from_bits(rng.randint(1, 2**52 - 1) | (rng.randrange(2) << 63))  # subnormal
        if r < 0.8:
            return round(rng.uniform(-1e6, 1e6), rng.randint(0, 6))
        while True:
            x = _from_bits(rng.getrandbits(64))
            if math.isfinite(x) and (x != 0.0 or self.special_reals or _bits(x) == 0):
                return x

    def bool(self):
        return self.rng.random() < 0.5

    def data(self):
        rng = self.rng
        n = rng.choice([0, 1, 2, 3, 4, 5, rng.randint(0, self.sizes.data),
                        rng.randint(0, self.sizes.data * 3)])
        return bytes(rng.getrandbits(8) for _ in range(n))

    def date(self):
        rng = self.rng
        if rng.random() < 0.2:
            return rng.choice([DATE_MIN, DATE_MAX, datetime.datetime(1970, 1, 1),
                               datetime.datetime(2001, 1, 1), datetime.datetime(1582, 10, 10),
                               datetime.datetime(1969, 12, 31, 23, 59, 59),
                               datetime.datetime(2000, 2, 29, 12, 0, 0)])
        span = int((DATE_MAX - DATE_MIN).total_seconds())
        return DATE_MIN + datetime.timedelta(seconds=rng.randint(0, span))


# --------------------------------------------------------------------------------------------
# Strict comparison


def tag(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "real"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (bytes, bytearray)):
        return "data"
    if isinstance(v, datetime.datetime):
        return "date"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "dict"
    return type(v).__name__


def _crlf(s):
    return s.replace("\r\n", "\n").replace("\r", "\n")


def _drop_leading_feff(s):
    return s[1:] if s.startswith(FEFF) else s


# How a string or key may come back from a reader that loses a U+FEFF or reads CR as LF;
# used only to name a difference, never to excuse one.
TRANSFORMS = [
    ("leading U+FEFF dropped", _drop_leading_feff),
    ("every U+FEFF dropped", lambda s: s.replace(FEFF, "")),
    ("CR became LF", _crlf),
    ("leading U+FEFF dropped and CR became LF", lambda s: _crlf(_drop_leading_feff(s))),
    ("every U+FEFF dropped and CR became LF", lambda s: _crlf(s.replace(FEFF, ""))),
]


def transform_of(before, after):
    for name, f in TRANSFORMS:
        if f(before) == after:
            return name
    return None


def compare(expected, got, path=(), out=None):
    """Every difference as (path, kind, expected, got); empty when identical.

    kind is type, value, length, missing, extra, or for dictionary keys: renamed (the key came
    back spelled differently: expected/got are the two keys), collided (the key came back as
    a key another one also came back as, and its value is not the one kept) and overwritten
    (the same, for the key that kept its spelling).
    """
    if out is None:
        out = []
    te, tg = tag(expected), tag(got)
    if te != tg:
        out.append((path, "type", expected, got))
    elif te == "dict":
        # Where each expected key came back: itself, or a spelling TRANSFORMS explains
        # (preferring one that holds the expected value). Several keys landing on one key
        # collided: only one value survived.
        landing = {}
        for k, v in expected.items():
            present = []
            for c in [k] + [f(k) for _, f in TRANSFORMS]:
                if c in got and c not in present:
                    present.append(c)
            if present:
                exact = [c for c in present if not compare(v, got[c])]
                same = [c for c in present if tag(got[c]) == tag(v)]
                landing[k] = (exact or same or present)[0]
        groups = collections.Counter(landing.values())
        for k, v in expected.items():
            if k not in landing:
                out.append((path + (k,), "missing", v, None))
                continue
            c = landing[k]
            if groups[c] > 1 and compare(v, got[c]):
                out.append((path + (k,), "collided" if c != k else "overwritten", k, c))
                continue
            if c != k:
                out.append((path + (k,), "renamed", k, c))
            compare(v, got[c], path + (k,), out)
        for k in got:
            if k not in groups:
                out.append((path + (k,), "extra", None, got[k]))
    elif te == "array":
        if len(expected) != len(got):
            out.append((path, "length", expected, got))
        for i, (e, g) in enumerate(zip(expected, got)):
            compare(e, g, path + (i,), out)
    elif te == "real":
        if _bits(expected) != _bits(got):
            out.append((path, "value", expected, got))
    elif te == "date":
        if expected != got or expected.tzinfo is not None or got.tzinfo is not None:
            out.append((path, "value", expected, got))
    elif te == "data":
        if bytes(expected) != bytes(got):
            out.append((path, "value", expected, got))
    elif expected != got:
        out.append((path, "value", expected, got))
    return out


def short(v, limit=60):
    if isinstance(v, float):
        s = "%r (0x%016x)" % (v, _bits(v))
    elif isinstance(v, (dict, list)):
        s = "%s of %d" % (tag(v), len(v))
    elif isinstance(v, str):
        s = ascii(v)
    else:
        s = repr(v)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def describe(diff):
    path, kind, e, g = diff
    p = "/".join(ascii(x) if isinstance(x, str) else str(x) for x in path) or "(top)"
    if kind == "missing":
        return "%s: missing (expected %s %s)" % (p, tag(e), short(e))
    if kind == "extra":
        return "%s: unexpected key (got %s %s)" % (p, tag(g), short(g))
    if kind == "renamed":
        return "%s: key came back as %s" % (p, ascii(g))
    if kind == "collided":
        return "%s: key came back as %s, as another key did: its value was lost" % (
            p, ascii(g))
    if kind == "overwritten":
        return "%s: value replaced by another key's that came back spelled as this one" % p
    if kind == "length":
        return "%s: array length %d, got %d" % (p, len(e), len(g))
    return "%s: expected %s %s, got %s %s" % (p, tag(e), short(e), tag(g), short(g))


def key_flavour(k):
    if k == "":
        return "empty key"
    if FEFF in k:
        return "key with U+FEFF"
    if "\r" in k:
        return "key with CR"
    if k.strip() == "":
        return "whitespace-only key"
    return "other key"


def real_flavour(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "-0.0" if math.copysign(1, x) < 0 else "0.0"
    if abs(x) < 2.2250738585072014e-308:
        return "subnormal"
    return "finite real"


def categorize(diffs):
    """A label for each difference of one document."""
    labels = []
    for path, kind, e, g in diffs:
        if kind == "renamed":
            labels.append("key renamed: %s" % (transform_of(e, g) or "changed"))
        elif kind == "collided":
            labels.append("key lost: %s made it equal another key" % (
                transform_of(e, g) or "a change"))
        elif kind == "overwritten":
            labels.append("value replaced by a colliding key's value")
        elif kind == "missing":
            labels.append("key missing (%s)" % key_flavour(path[-1]))
        elif kind == "extra":
            labels.append("unexpected extra key")
        elif kind == "type":
            extra = " (%s)" % real_flavour(e) if tag(e) == "real" else ""
            labels.append("type %s -> %s%s" % (tag(e), tag(g), extra))
        elif kind == "length":
            labels.append("array length changed")
        elif tag(e) == "real":
            labels.append("real %s -> %s" % (real_flavour(e), real_flavour(g)))
        elif tag(e) == "string":
            labels.append("string: %s" % (transform_of(e, g) or "changed"))
        else:
            labels.append("%s changed" % tag(e))
    return labels


# --------------------------------------------------------------------------------------------
# XML documents in many spellings

VARIATIONS = [
    "bom", "decl_single", "decl_lower", "no_doctype", "crlf", "cr", "mixed_newlines",
    "indent_spaces", "no_indent", "one_line", "comments", "root_comments", "keyval_comments",
    "pis", "cdata", "charrefs", "named_entities", "int_plus", "int_hex", "real_spellings",
    "real_words", "true_space", "empty_forms", "data_wrap", "unsorted",
]
# Mutually exclusive groups: at most one of each is kept.
EXCLUSIVE = [("crlf", "cr", "mixed_newlines"), ("indent_spaces", "no_indent", "one_line")]

REAL_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
COMMENT_TEXT = [" a comment ", " <b>&amp; raw & < > ", " é 😀 \ufeff ", "", " a-b ",
                " ]]> ", " <key>x</key> ", "x", " ?> ", " line{nl}two "]
PI_TEXT = ["foo bar", "foo", "app-data x=\"1\"", "pi <not> & markup", "x-y  z"]


def random_case(rng, word):
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in word)


class XMLWriter:
    """One document's spelling. With no variations it writes what plistlib.dumps writes."""

    def __init__(self, rng, variations):
        self.rng = rng
        self.v = set(variations)
        self.indent = "\t"
        if "indent_spaces" in self.v:
            self.indent = rng.choice(["  ", "    ", " "])
        elif "no_indent" in self.v or "one_line" in self.v:
            self.indent = ""

    # whitespace and misc items between elements

    def nl(self):
        if "one_line" in self.v:
            return self.rng.choice(["", " "])
        if "crlf" in self.v:
            return "\r\n"
        if "cr" in self.v:
            return "\r"
        if "mixed_newlines" in self.v:
            return self.rng.choice(["\n", "\r\n", "\r"])
        return "\n"

    def comment(self):
        text = self.rng.choice(COMMENT_TEXT).replace("{nl}", self.nl() or "\n")
        assert "--" not in text and not text.endswith("-")
        return "<!--%s-->" % text

    def pi(self):
        text = self.rng.choice(PI_TEXT)
        target, _, rest = text.partition(" ")
        assert "?>" not in text and not target.lower().startswith("xml")
        return "<?%s%s?>" % (target, " " + rest if rest else "")

    def misc(self, comments, level):
        """Zero or more comments / PIs, each followed by whitespace."""
        s = ""
        while True:
            choices = []
            if comments:
                choices.append(self.comment)
            if "pis" in self.v:
                choices.append(self.pi)
            if not choices or self.rng.random() > 0.3:
                return s
            s += self.rng.choice(choices)() + self.nl() + self.indent * level

    def gap(self, level, where="element"):
        s = self.nl() + self.indent * level
        comments = "comments" in self.v
        if where == "root":
            comments = "root_comments" in self.v
        elif where == "keyval":
            comments = "keyval_comments" in self.v
        return s + self.misc(comments, level)

    # text

    def charref(self, c):
        form = self.rng.randrange(3)
        if form == 0:
            return "&#%d;" % ord(c)
        if form == 1:
            return "&#x%X;" % ord(c)
        return "&#x%x;" % ord(c)

    def text(self, s):
        rng = self.rng
        parts = [s]
        if "cdata" in self.v and s and rng.random() < 0.6:
            cuts = sorted(rng.sample(range(len(s) + 1), min(len(s) + 1, rng.randint(1, 4))))
            parts = [s[a:b] for a, b in zip([0] + cuts, cuts + [len(s)])]
        out = []
        tail = ""  # the literal character data written since the last CDATA section
        for part in parts:
            if (len(parts) > 1 and part and "\r" not in part and "]]>" not in part
                    and rng.random() < 0.5):
                out.append("<![CDATA[%s]]>" % part)
                tail = ""
                continue
            for c in part:
                if c == "\r":
                    piece = self.charref(c)            # a raw CR would read as LF
                elif "charrefs" in self.v and rng.random() < (0.5 if c == FEFF else 0.15):
                    piece = self.charref(c)
                elif c == "&":
                    piece = "&amp;"
                elif c == "<":
                    piece = "&lt;"
                elif c == ">":
                    raw_ok = "named_entities" in self.v and not tail.endswith("]]")
                    piece = ">" if raw_ok and rng.random() < 0.5 else "&gt;"
                elif c == '"' and "named_entities" in self.v and rng.random() < 0.5:
                    piece = "&quot;"
                elif c == "'" and "named_entities" in self.v and rng.random() < 0.5:
                    piece = "&apos;"
                else:
                    piece = c
                out.append(piece)
                tail = (tail + piece)[-2:]
        return "".join(out)

    # elements

    def empty(self, name):
        if "empty_forms" in self.v:
            return self.rng.choice(["<%s/>", "<%s />", "<%s></%s>"]).replace("%s", name)
        return "<%s/>" % name

    def text_element(self, name, s):
        if s == "" and "empty_forms" in self.v and self.rng.random() < 0.5:
            return self.rng.choice(["<%s/>", "<%s />"]) % name
        return "<%s>%s</%s>" % (name, self.text(s), name)

    def integer(self, n):
        if n >= 0 and "int_hex" in self.v and self.rng.random() < 0.4:
            return "0x" + "".join(random_case(self.rng, c) for c in "%x" % n)
        if n >= 0 and "int_plus" in self.v and self.rng.random() < 0.4:
            return "+%d" % n
        return "%d" % n

    def real(self, x):
        rng = self.rng
        if math.isnan(x):
            return random_case(rng, "nan") if "real_words" in self.v else "nan"
        if math.isinf(x):
            if "real_words" not in self.v:
                return repr(x)
            word = rng.choice(["inf", "infinity"])
            sign = "-" if x < 0 else rng.choice(["", "+"])
            return sign + random_case(rng, word)
        r = repr(x)
        if "real_spellings" not in self.v:
            return r
        cands = [r, "%.17g" % x, "%.17e" % x, r.upper(), r.replace("e+", "e")]
        if r.startswith("0."):
            cands.append(r[1:])
        if r.startswith("-0."):
            cands.append("-" + r[2:])
        if r.endswith(".0") and "e" not in r:
            cands += [r[:-2], r[:-1], r[:-2] + "e0"]
        if "e" in r:
            m, _, e = r.partition("e")
            cands.append("%se%+04d" % (m, int(e)))
        if not r.startswith("-"):
            cands += ["+" + c for c in list(cands)]
        c = rng.choice(cands)
        if REAL_RE.match(c) and _bits(float(c)) == _bits(x):
            return c
        return r

    def data(self, b, level):
        if not b and "empty_forms" in self.v and self.rng.random() < 0.5:
            return self.empty("data")
        ind = self.indent * level
        if "data_wrap" in self.v:
            enc = base64.b64encode(b).decode("ascii")
            mode = self.rng.randrange(3)
            if mode == 0:
                return "<data>%s</data>" % enc
            width = self.rng.choice([4, 16, 60, 76, 7])
            lines = [enc[i:i + width] for i in range(0, len(enc), width)]
            sep = "\n" + (ind if mode == 1 else self.rng.choice(["", " ", "\t\t"]))
            return "<data>" + sep + sep.join(lines) + "\n" + ind + "</data>"
        # plistlib's own layout (lines of base64 at the element's indentation)
        maxline = max(16, 76 - len(self.indent.replace("\t", " " * 8) * level))
        maxbin = (maxline // 4) * 3
        lines = [binascii.b2a_base64(b[i:i + maxbin]).decode("ascii").rstrip("\n")
                 for i in range(0, len(b), maxbin)]
        # Line ends inside the element stay LF: CR/CRLF only go between elements.
        nl = "" if "one_line" in self.v else "\n"
        s = "<data>" + nl
        for line in lines:
            s += ind + line + nl
        return s + ind + "</data>"

    def element(self, v, level):
        t = tag(v)
        if t == "dict":
            if not v:
                return self.empty("dict")
            keys = list(v)
            if "unsorted" in self.v:
                self.rng.shuffle(keys)
            else:
                keys.sort()
            s = "<dict>"
            for k in keys:
                s += self.gap(level + 1) + self.text_element("key", k)
                s += self.gap(level + 1, "keyval") + self.element(v[k], level + 1)
            return s + self.gap(level) + "</dict>"
        if t == "array":
            if not v:
                return self.empty("array")
            s = "<array>"
            for item in v:
                s += self.gap(level + 1) + self.element(item, level + 1)
            return s + self.gap(level) + "</array>"
        if t == "string":
            return self.text_element("string", v)
        if t == "integer":
            return "<integer>%s</integer>" % self.integer(v)
        if t == "real":
            return "<real>%s</real>" % self.real(v)
        if t == "bool":
            word = "true" if v else "false"
            return ("<%s />" if "true_space" in self.v and self.rng.random() < 0.6
                    else "<%s/>") % word
        if t == "date":
            return "<date>%04d-%02d-%02dT%02d:%02d:%02dZ</date>" % (
                v.year, v.month, v.day, v.hour, v.minute, v.second)
        if t == "data":
            return self.data(v, level)
        raise TypeError(t)

    def document(self, value):
        q = "'" if "decl_single" in self.v else '"'
        enc = "utf-8" if "decl_lower" in self.v else "UTF-8"
        s = "<?xml version=%s1.0%s encoding=%s%s%s?>" % (q, q, q, enc, q)
        s += self.gap(0, "root")
        if "no_doctype" not in self.v:
            s += ('<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
                  '"http://www.apple.com/DTDs/PropertyList-1.0.dtd">')
            s += self.gap(0, "root")
        s += '<plist version="1.0">' + self.gap(0) + self.element(value, 0) + self.gap(0)
        s += "</plist>"
        if "root_comments" in self.v or "pis" in self.v:
            s += self.gap(0, "root")
        s += "\n" if "one_line" not in self.v else self.rng.choice(["", "\n"])
        data = s.encode("utf-8")
        if "bom" in self.v:
            data = b"\xef\xbb\xbf" + data
        return data


def pick_variations(rng):
    if rng.random() < 0.1:
        return []
    chosen = [v for v in VARIATIONS if rng.random() < 0.3]
    for group in EXCLUSIVE:
        present = [v for v in chosen if v in group]
        for v in present[1:]:
            chosen.remove(v)
    return chosen


def reads_as(doc, value):
    try:
        got = plistlib.loads(doc)
    except Exception:
        return False
    return not compare(value, got)


def xml_document(rng, value, variations, stats):
    """A document plistlib reads as `value`, with as many of `variations` as keep that true."""
    doc_rng_state = rng.getstate()
    doc = XMLWriter(rng, variations).document(value)
    if reads_as(doc, value):
        return doc, variations
    stats["variation retries"] += 1
    kept = list(variations)
    for v in list(variations):
        trial = [x for x in kept if x != v]
        rng.setstate(doc_rng_state)
        doc = XMLWriter(rng, trial).document(value)
        if reads_as(doc, value):
            stats["variation dropped: " + v] += 1
            return doc, trial
    stats["all variations dropped"] += 1
    doc = XMLWriter(rng, []).document(value)
    assert reads_as(doc, value), "the plain spelling does not read back"
    return doc, []


def make_doc(seed, kind, index, sizes, plain, stats):
    """(document bytes, plistlib's reading, variations) for one numbered document."""
    rng = random.Random("%s:%s:%d" % (seed, kind, index))
    gen = ValueGen(rng, sizes, plain)
    value = gen.top()
    if kind == "bin":
        doc = plistlib.dumps(value, fmt=plistlib.FMT_BINARY, sort_keys=rng.random() < 0.5)
        variations = []
    elif plain:
        doc = plistlib.dumps(value)
        variations = []
    else:
        doc, variations = xml_document(rng, value, pick_variations(rng), stats)
    variations = variations + gen.features
    expected = plistlib.loads(doc)
    diffs = compare(value, expected)
    if diffs:
        # Only binary: plistlib's binary writer shares one object among equal scalars, and
        # -0.0 == 0.0, so a -0.0 after a 0.0 (or the reverse) is written as the first one.
        # The document's reading is what the harness must keep.
        assert kind == "bin" and all(
            d[1] == "value" and tag(d[2]) == "real" and d[2] == 0.0 for d in diffs), \
            "generator: plistlib does not read the value back: %s" % describe(diffs[0])
        stats["binary: plistlib shared 0.0 and -0.0"] += 1
    return doc, expected, variations


# --------------------------------------------------------------------------------------------
# Running the harness


class Result:
    def __init__(self, kind, index, variations):
        self.kind = kind
        self.index = index
        self.variations = variations
        self.status = "pass"          # pass | refusal | fail
        self.labels = []              # failure categories
        self.details = []             # human-readable lines
        self.message = ""             # refusal message

    @property
    def name(self):
        return "%s:%d" % (self.kind, self.index)


def run_one(harness, workdir, kind, index, doc, expected, variations):
    res = Result(kind, index, variations)
    home = tempfile.mkdtemp(prefix="%s-%d-" % (kind, index), dir=workdir)
    try:
        empty_dirs = os.path.join(home, "xdg-dirs")
        os.mkdir(empty_dirs)
        path = os.path.join(home, SUITE + ".plist")
        with open(path, "wb") as f:
            f.write(doc)
        env = dict(os.environ)
        env.update(XDG_CONFIG_HOME=home, HOME=home, XDG_CONFIG_DIRS=empty_dirs)
        try:
            proc = subprocess.run([harness, "defaults", "write", SUITE, PROBE, "-int", "7"],
                                  env=env, cwd=home, stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            res.status = "fail"
            res.labels.append("timeout (%d s)" % TIMEOUT)
            res.details.append("harness did not finish in %d s" % TIMEOUT)
            return res
        try:
            with open(path, "rb") as f:
                after = f.read()
        except OSError as e:
            after = None
            missing = str(e)
        stderr = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip()
        if proc.returncode < 0:
            try:
                sig = signal.Signals(-proc.returncode).name
            except ValueError:
                sig = "signal %d" % -proc.returncode
            res.status = "fail"
            res.labels.append("crash (%s)" % sig)
            res.details.append("harness killed by %s; stderr: %s" % (sig, stderr[:200]))
            return res
        if proc.returncode > 0:
            res.message = (stderr.splitlines()[0] if stderr
                           else "(exit %d, no message)" % proc.returncode)
            res.message = res.message.replace(home, "$XDG_CONFIG_HOME")
            if after == doc:
                res.status = "refusal"
            else:
                res.status = "fail"
                if after is not None:
                    res.labels.append("refusal changed the file")
                elif "moved aside" in res.message:
                    res.labels.append("refusal moved the file aside (called it damaged)")
                else:
                    res.labels.append("refusal removed the file")
                res.details.append("exit %d (%s) but the file %s" % (
                    proc.returncode, res.message,
                    "changed" if after is not None else "is gone: " + missing))
            return res
        if after is None:
            res.status = "fail"
            res.labels.append("file missing after write")
            res.details.append(missing)
            return res
        try:
            got = plistlib.loads(after)
        except Exception as e:
            res.status = "fail"
            res.labels.append("output unreadable by plistlib")
            res.details.append("plistlib: %s" % e)
            return res
        if not isinstance(got, dict):
            res.status = "fail"
            res.labels.append("output top level not a dict")
            res.details.append("top level is %s" % tag(got))
            return res
        probe = got.pop(PROBE, None)
        if tag(probe) != "integer" or probe != 7:
            res.labels.append("probe not read back as int 7")
            res.details.append("probe: expected integer 7, got %s %s" % (tag(probe), short(probe)))
        diffs = compare(expected, got)
        res.labels += categorize(diffs)
        res.details += [describe(d) for d in diffs]
        if res.labels:
            res.status = "fail"
        res.output = after
        return res
    finally:
        shutil.rmtree(home, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# The corpus for the Swift tests


def typed(v):
    t = tag(v)
    if t == "dict":
        return {"dict": {k: typed(x) for k, x in v.items()}}
    if t == "array":
        return {"array": [typed(x) for x in v]}
    if t == "string":
        return {"string": v}
    if t == "integer":
        return {"integer": str(v)}
    if t == "real":
        return {"real": "%016x" % _bits(v)}
    if t == "bool":
        return {"bool": v}
    if t == "date":
        return {"date": str((v - EPOCH_1970) // datetime.timedelta(seconds=1))}
    if t == "data":
        return {"data": base64.b64encode(v).decode("ascii")}
    raise TypeError(t)


def emit_corpus(args):
    stats = collections.Counter()
    entries = []
    for i in range(args.count):
        doc, expected, _ = make_doc(args.seed, "corpus", i, CORPUS_SIZES, args.plain, stats)
        entries.append({"xml": base64.b64encode(doc).decode("ascii"), "value": typed(expected)})
    os.makedirs(os.path.dirname(os.path.abspath(args.emit_corpus)), exist_ok=True)
    with open(args.emit_corpus, "w", encoding="ascii") as f:
        f.write("[\n" + ",\n".join(json.dumps(e, ensure_ascii=True, separators=(",", ":"))
                                   for e in entries) + "\n]\n")
    size = os.path.getsize(args.emit_corpus)
    print("wrote %d documents (%d bytes) to %s" % (len(entries), size, args.emit_corpus))
    for k, n in sorted(stats.items()):
        print("  generator: %s: %d" % (k, n), file=sys.stderr)
    return 0


# --------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--harness", help="path to the prefs-harness executable")
    ap.add_argument("--count", type=int, default=1000, help="XML documents (default 1000)")
    ap.add_argument("--binary-count", type=int, default=300,
                    help="binary documents (default 300)")
    ap.add_argument("--seed", default="1", help="seed; the same seed makes the same documents")
    ap.add_argument("--keep-failures", metavar="DIR",
                    help="save each failing document, the harness's output and the differences")
    ap.add_argument("--plain", action="store_true",
                    help="plistlib's own spelling, no -0.0/inf/nan/U+FEFF/CR values")
    ap.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1),
                    help="harness runs at a time")
    ap.add_argument("--only", metavar="KIND:I", action="append",
                    help="run just these documents, e.g. xml:17 or bin:3 (repeatable)")
    ap.add_argument("--show", type=int, default=8, help="failures to describe (default 8)")
    ap.add_argument("--emit-corpus", metavar="PATH",
                    help="write --count XML documents and their values as JSON; no harness")
    args = ap.parse_args()

    if args.emit_corpus:
        return emit_corpus(args)
    if not args.harness:
        ap.error("--harness is required (or --emit-corpus)")
    harness = os.path.abspath(args.harness)
    if not os.access(harness, os.X_OK):
        ap.error("not an executable: %s" % harness)

    if args.only:
        todo = []
        for item in args.only:
            kind, _, i = item.partition(":")
            if kind not in ("xml", "bin") or not i.isdigit():
                ap.error("--only takes xml:N or bin:N")
            todo.append((kind, int(i)))
    else:
        todo = [("xml", i) for i in range(args.count)] + \
               [("bin", i) for i in range(args.binary_count)]

    stats = collections.Counter()
    docs = {}
    for kind, i in todo:
        docs[(kind, i)] = make_doc(args.seed, kind, i, RUN_SIZES, args.plain, stats)

    workdir = tempfile.mkdtemp(prefix="plist-roundtrip-")
    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            futures = [pool.submit(run_one, harness, workdir, kind, i, *docs[(kind, i)])
                       for kind, i in todo]
            results = [f.result() for f in futures]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    passed = [r for r in results if r.status != "fail"]
    failed = [r for r in results if r.status == "fail"]
    refusals = [r for r in results if r.status == "refusal"]

    if args.keep_failures and failed:
        os.makedirs(args.keep_failures, exist_ok=True)
        for r in failed:
            doc = docs[(r.kind, r.index)][0]
            base = os.path.join(args.keep_failures, "%s-%d" % (r.kind, r.index))
            with open(base + ".plist", "wb") as f:
                f.write(doc)
            if getattr(r, "output", None) is not None:
                with open(base + ".after.plist", "wb") as f:
                    f.write(r.output)
            with open(base + ".txt", "w", encoding="utf-8") as f:
                f.write("document %s, seed %s%s\nvariations: %s\n\n" % (
                    r.name, args.seed, " (--plain)" if args.plain else "",
                    ", ".join(r.variations) or "(none)"))
                f.write("\n".join(r.details) + "\n")

    # Refusal messages go to stderr, grouped (digits folded so line numbers group together).
    if refusals:
        groups = collections.Counter(re.sub(r"\d+", "N", r.message) for r in refusals)
        print("refusals (file left byte-identical), by message:", file=sys.stderr)
        for msg, n in groups.most_common():
            print("  %5d  %s" % (n, msg), file=sys.stderr)
    for k, n in sorted(stats.items()):
        print("generator: %s: %d" % (k, n), file=sys.stderr)
    sys.stderr.flush()

    by_kind = collections.Counter(r.kind for r in results)
    ref_kind = collections.Counter(r.kind for r in refusals)
    fail_kind = collections.Counter(r.kind for r in failed)
    print("seed %s%s: %d XML documents (%d refused, %d failed), %d binary (%d refused, %d failed)"
          % (args.seed, " --plain" if args.plain else "", by_kind["xml"], ref_kind["xml"],
             fail_kind["xml"], by_kind["bin"], ref_kind["bin"], fail_kind["bin"]))
    print("refusals: %d (messages on stderr)" % len(refusals))

    if failed:
        cats = collections.Counter()
        occurrences = collections.Counter()
        for r in failed:
            for label in set(r.labels):
                cats[label] += 1
            for label in r.labels:
                occurrences[label] += 1
        print("failure categories (documents / occurrences):")
        for label, n in cats.most_common():
            print("  %5d / %-5d  %s" % (n, occurrences[label], label))

        for kind, title, rows in (("xml", "XML", VARIATIONS + VALUE_FEATURES),
                                  ("bin", "binary", VALUE_FEATURES)):
            of_kind = [r for r in results if r.kind == kind]
            if not of_kind:
                continue
            print("%s documents by variation / value feature (with it / failed / refused):"
                  % title)
            for v in rows + ["(none)"]:
                has = [r for r in of_kind
                       if (v in r.variations) or (v == "(none)" and not r.variations)]
                if has:
                    print("  %-21s %5d / %5d / %5d" % (
                        v, len(has), sum(r.status == "fail" for r in has),
                        sum(r.status == "refusal" for r in has)))
        print("first failures:")
        for r in failed[: args.show]:
            print("  %s [%s]" % (r.name, ", ".join(r.variations) or "no variations"))
            for line in r.details[:4]:
                print("      " + line)
            if len(r.details) > 4:
                print("      ... and %d more" % (len(r.details) - 4))
        if args.keep_failures:
            print("failing documents saved in %s" % args.keep_failures)
    print("%d passed, %d failed" % (len(passed), len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
