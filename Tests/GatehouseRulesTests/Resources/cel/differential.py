#!/usr/bin/env python3
# -*- coding: utf-8 -*-
#
# ============================================================================
# DISAGREEMENT REPORT  (cel = common-expression-language 0.10.0, Rust cel crate;
#                       celpy = cel-python 0.5.0)
# ============================================================================
# Run (library outcomes; this table was written at 743 cases): 769 cases
# (469 hand-written, 300 generated), 625 agree, 144 disagree (103
# hand-written, 41 generated); the 26 hand-written cases added since (the
# Gatehouse decisions: string(double) formatting, int/uint/double/bool of
# strings, global endsWith/contains, has() on null, literal operands that fit
# no overload) are ruled in RULINGS.  "Spec" = google/cel-spec @508bd98:
# doc/langdef.md line L..., and the conformance files
# tests/simple/testdata/<file>.textproto:<line> (the spec's own answers).
# "ok" names the library that matches the spec.  "err" = any error.
#
# Literals / parsing
#  1 """multi<LF>line""" (raw newline)   cel "multi\nline" | celpy "multiline"
#    spec "multi\nline": L255-256 "Triple-quoted strings may contain newlines";
#    parse.textproto:257 triple_double_quoted_unescaped_line_feed.  ok: cel
#  2 "...\?...\`"    cel "?" and "`" | celpy keeps the backslash ("\?", "\`")
#    spec "?", "`": L115 ESCAPE ::= \ [abfnrtv\?"'`];
#    parse.textproto:163 double_quoted_escaped_punctuation.  ok: cel
#  3 "\s"            cel err (parse) | celpy "\s".  spec err: L320.  ok: cel
#  4 "\uD83D"        cel err (parse) | celpy lone surrogate (invalid_string)
#    spec err: L322 (UTF-16 surrogates are invalid).  ok: cel
#  5 [1, 2,]         cel [1, 2] | celpy err (parse)
#    spec [1, 2]: L44 "[" [ExprList] [","] "]".  ok: cel
#  6 {"a": 1, "a": 2}  cel {"a": 2} | celpy err;
#    {true: 1, false: 2, true: 3}[true]  cel 3 | celpy err
#    spec err: L360-361 "It is an error to have duplicate keys";
#    fields.textproto:621 map_value_repeat_key.  ok: celpy
#  7 {1.5: "x"}      cel err | celpy map with a double key
#    spec err: L341 key types int/uint/bool/string;
#    fields.textproto:599 map_key_float.  ok: cel
#
# Integer arithmetic
#  8 -(-9223372036854775808), -(-9223372036854775807 - 1)
#    cel -9223372036854775808 (wraps) | celpy err
#    spec err: L1169 overflow; integer_math.textproto:222 int64_min_negate.
#    ok: celpy
#  9 -9223372036854775808 % -1   cel err (overflow) | celpy 0
#    spec: prose silent, no conformance test; the reference cel-go returns an
#    overflow error (common/types/overflow.go:104 moduloInt64Checked).  ok: cel
# 10 1 + 1u  cel err | celpy 2 (int).  Generated (4): claims.level - 2u,
#    claims.score + 2u, claims.level % 1.0, claims.score * 2 (score 3.0);
#    hand: claims.level + 1 (level 3.0), claims.numbers.map(x, x * 2)
#    (has 2.0): cel err | celpy a value.
#    spec err: L229-233 "an expression like `1 + 1u` is going to fail to
#    dispatch".  ok: cel
#
# Doubles
# 11 -1.0 / 0.0   cel -Infinity | celpy +Infinity
#    0.0 / 0.0    cel NaN       | celpy +Infinity
#    spec IEEE 754: L1075; fp_math.textproto:93 divide_zero.  ok: cel
# 12 0.0 / 0.0 == 0.0 / 0.0   cel false | celpy true
#    dyn(1) == 0.0 / 0.0      cel false | celpy err
#    spec false: L1075-1076; comparisons.textproto:80 not_eq_double_nan,
#    :85 not_eq_int_double_nan.  ok: cel
# 13 string(1e21)  cel "1000000000000000000000" | celpy "1e+21"
#    spec: L2151 only says "converts a double to a string"; cel-go uses
#    fmt.Sprintf("%g") (common/types/double.go:141) = "1e+21".  ok: celpy
#    (per reference impl).  Only string(123.456) -> "123.456" and
#    string(-4.5e-3) -> "-0.0045" are pinned by conversions.textproto:265/270.
#
# Heterogeneous (cross-type) equality, ordering, membership
# 14 3 == 3.0, 1 == 1u, dyn(1) == 1.0, 1.0 == 1u, 1 != 1.0, [1, 2] == [1, 2.0],
#    {"a": 1} == {"a": 1u}, claims.ratio == 3 (3.0), claims.level == 3
#    (level 3.0), claims.profile.manager.id == 7 (7.0), claims.score == 0
#    (0.0), claims.ratio == -7 (-7.0), + 17 generated rules (e.g.
#    claims.level >= 2u, claims.score != -7, manager.id < 7u || ... > 7u)
#    cel numeric result | celpy err ("no matching overload")
#    spec numeric equality/ordering: L1028-1037, L1048-1056, L1155-1157,
#    L1557 `dyn(3.0) == 3 // true`, L1617 `-1 < dyn(1u) // true`;
#    comparisons.textproto:283 eq_mixed_types, :289 eq_list_elem_mixed_types,
#    :1236 lt_dyn_int_uint, :1241 lt_dyn_int_double.  ok: cel
# 15 1 < 1.5, -1 < 1u, 1 <= 1.0   cel true | celpy err.  (as 14)  ok: cel
# 16 null == 0, "a" == 1, [1] == ["1"], [] == {},
#    {'k': 'v', 1: 1} == {'k': 'v', 1: 'v1'},  claims.level == null (3.0),
#    int("42") == claims.level (null)   cel false | celpy err
#    spec false: L1034-1037 (different types -> `: false`);
#    comparisons.textproto:295 eq_map_value_mixed_types.  ok: cel
# 17 1.0 in [1, 2], 2u in [1, 2]   cel true | celpy err
#    'elem' in [1u, 'str', 2, b'bytes'], 'key' in {1u: 'str', 2: b'bytes'},
#    [1, 'foo', 3].exists(e, e == '10')   cel false | celpy err
#    spec: L1068-1073; lists.textproto:193/203 (uint_in_ints/_doubles);
#    comparisons.textproto:2163, :2194; macros.textproto:31.  ok: cel
# 18 BOTH WRONG: {1: "a"} == {1u: "a"}, {1: 1.0, 2u: 3u} == {1u: 1, 2: 3.0}
#    cel false | celpy err.  spec true: L1087-1091 with L1059-1066;
#    comparisons.textproto:253 eq_map_mixed_type_numbers.
#    BOTH WRONG: 1u in {1: "x"},
#    3.0 in {1: 1, 2: 2, 3u: 3} && 2u in {1u: 1, 2: 2} && 1 in {1u: 1, 2: 2}
#    cel false | celpy err.  spec true: fields.textproto:665
#    mixed_numbers_and_keys_present.
#
# Logic
# 19 false || "a"   cel err | celpy "a";   true && 1   cel err | celpy 1
#    spec err: L1354 / L1371 (`bool || bool -> bool`, `bool && bool`);
#    logic.textproto:101/169 no_overload.  ok: cel
# 20 (6 generated, claim set "nulls") e.g.
#    claims.groups.exists(g, g.contains("g1")) && has(claims.score)
#      || "x-request-id" in request.headers        (groups = null)
#    cel true/false | celpy err (a Python TypeError escapes the evaluator, so
#    the error is not absorbed by || / &&).
#    spec: the other operand decides: L662-665.  ok: cel
#
# Indexing, has()
# 21 [1, 2, 3][-1]  cel err | celpy 3 (Python negative index)
#    spec err: L1671 (index out of range; lists.textproto:96).  ok: cel
# 22 "abc"[0]  cel err | celpy "a".  spec err: no string indexing overload
#    (L1665-1720 list and map indexing only).  ok: cel
# 23 has(claims.missing.x), has(claims.groups.x), has(claims.level.x),
#    generated has(claims.profile.manager) / !(has(...)) with profile = null
#    cel err | celpy false/true
#    spec err: L760 "In all other cases, has(e.f) evaluates to an error".
#    ok: cel
# 24 has(claims["n"])  cel err (parse) | celpy true
#    spec err: L1212-1213 "Only map accesses using the select notation are
#    supported".  ok: cel
#
# Macros
# 25 [0, -1].all(x, 2 / x > 0), [1, 2, 3].all(e, 6 / (2 - e) == 6)
#    cel err | celpy false;   [0, 1].exists(x, 1 / x == 1)  cel err | celpy true
#    spec false / true: L684-692 (errors absorbed when another element
#    decides); macros.textproto:102 list_elem_error_shortcircuit.  ok: celpy
#    (cel-rust propagates the first error it meets; it agrees only when the
#    deciding element comes first: [-1, 0].all(...), [1, 0].exists(...)).
# 26 [1, 2, 3, 4].map(x, x % 2 == 0, x * 10) and 1 more hand + 5 generated
#    3-argument map()   cel [20, 40] | celpy err (3-arg map unsupported)
#    spec: L706 e.map(x, p, t).  ok: cel
# 27 "abc".all(c, true)   cel err | celpy true
#    spec err: L1236-1239 (all() is on lists and maps only).  ok: cel
#
# size() and strings
# 28 size("café"), "café".size(), size("😀"), size("\U0001F600"),
#    size(claims.name) (x2), + 2 generated
#    cel UTF-8 byte count (5, 5, 4, 4, 13, 14) | celpy code points (4, 4, 1,
#    1, 11, 8).  spec code points: L1840-1841; string.textproto:31
#    size('πέντε') == 5.  ok: celpy
# 29 size(null) + 3 generated (size of a null claim)   cel err | celpy 0
#    spec err: size overloads are string/bytes/list/map only (L936-960).
#    ok: cel
# 30 startsWith("abc", "a")   cel err | celpy true
#    spec err: L1831 only `string.startsWith(string)`; L1003-1006 receiver
#    style.  ok: cel
# 31 matches("foobar", "^bar")   cel err (no global form) | celpy false
#    spec false: L1814 `matches(string, string) -> bool`.  ok: celpy
#
# Conversions
# 32 int(" 42"), int("0x10")   cel err | celpy 42, 16
#    spec: L2123 gives no syntax; cel-go parses with strconv.ParseInt(s, 10,
#    64) (common/types/string.go:103) -> err.  ok: cel
# 33 int(true), double(true), bool(1), string(null), string([1]),
#    generated string(claims.name), uint(claims.active) with null claims
#    cel err | celpy 1, 1.0, true, "None", "ListType([IntType(1)])", "None", 0u
#    spec err: no such overloads (L2019-2215).  ok: cel
# 34 uint(-0.5)   cel err | celpy 0u
#    spec: L2205-2206 "rounds toward zero, errors if out of range" is
#    ambiguous; cel-go doubleToUint64Checked rejects v < 0
#    (common/types/overflow.go:313) -> err.  ok: cel
# 35 BOTH WRONG: string(true), string(false)   cel err | celpy "True"/"False"
#    spec "true"/"false": L2146-2147.
# 36 string(b"\xff"), string(b'\000\xff')   cel U+FFFD replacement | celpy err
#    spec err: L2152-2153 "errors for invalid code points";
#    conversions.textproto:284 bytes_invalid.  ok: celpy
# 37 bool("true"), bool("FALSE"), bool('t'), bool('0'), bool(true)
#    cel err (bool() is not in cel's native library) | celpy true, false,
#    true, false, true.  spec: L2025-2026; conversions.textproto:516-561
#    (string_1, string_t, ...).  ok: celpy
#
# Cases where the two libraries AGREE but both contradict the spec (the
# "agree" flag is not a correctness oracle):
#  - {1: "x"}[1u], {1u: "x"}[1], {1: "x"}[1.0], {1u: 1.0, 2: 2.0, 3u: 3.0}[3.0]
#    / [2u] / [1]: both err; spec: the value (fields.textproto:36-55
#    map_key_mixed_numbers_*; L1059-1066).
#  - 3.1 in {1: 1, 2: 2, 3u: 3}: both err; spec false (fields.textproto:671).
#  - [1, 2, 3][1.0]: both err; spec 2 (lists.textproto:64 zero_based_double).
#  - 1 || true, false && 1: both a value; Gatehouse's checker (and the spec's,
#    L229-233) refuses a literal operand that fits no overload: error.
#  - uint("+5"): both 5u; Go ParseUint (Gatehouse's rule) rejects a sign.
#
# EXPECTED OUTCOMES.  Every case carries "expected" (what a spec-conforming
# evaluator -- Gatehouse's -- must produce) and "ruling" ("agree" when both
# libraries produce it, else the rule and its citation).  Hand-written cases:
# the RULINGS table (below HAND), else the libraries' common outcome after
# the review above.  Generated cases: an independent oracle built alongside
# each generated expression (gen_atom/gen_bool/gen_value), which follows the
# spec and the Gatehouse decisions; it agrees with both libraries on every
# generated case where they agree, and with one of them on every other.
# ============================================================================
"""Differential CEL test-case generator for Gatehouse route rules.

Usage:  python3 differential.py > cases.json     (summary lines on stderr)
        python3 differential.py --check           (no JSON; exit status 1 if
                                                   a case lacks "expected")

Deterministic: fixed seed, fixed inputs; the libraries run in two worker
subprocesses (`--worker cel`, `--worker celpy`) so that a hang or a crash of a
library cannot take the generator down (10 s per case; such a case is dropped
from the output with a DROPPED line on stderr -- none are at present).

Output: one JSON document (UTF-8) {"cases": [case, ...]}, each case
  {"kind": "hand" | "generated", "expression": str, "claims_set": str,
   "claims": {...}, "request": {"method", "path", "host", "headers"},
   "cel": outcome, "celpy": outcome, "agree": bool,
   "expected": outcome, "ruling": str}
outcome  = {"error": "<short message>"} | {"value": encoded}
encoded  = {"int": "<decimal>"} | {"uint": "<decimal>"}
         | {"double": repr(float) | "NaN" | "Infinity" | "-Infinity"}
         | {"bool": b} | {"string": s} | {"bytes": "<standard base64>"}
         | {"null": null} | {"list": [encoded, ...]}
         | {"map": [[encoded key, encoded value], ...]}
         | {"type": "int"|"uint"|"double"|"bool"|"string"|"bytes"|"null_type"
                    |"list"|"map"|"type"}
         | {"invalid_string": ["U+D83D", ...]}   (only when a library returns
           a string holding lone surrogates, which no valid CEL string does)
Notes for the consumer:
  * Map entries are sorted by the canonical JSON text of the [key, value]
    pair (json.dumps(sort_keys=True, separators=(",", ":"),
    ensure_ascii=True), compared as Python str).  The order carries no
    meaning: compare maps as unordered sets of entries.  List order matters.
  * Doubles are Python repr strings ("1e+16", "1000000000000000.0", "-0.0");
    compare them by parsing to Double, not textually.
  * Claim numbers: a JSON number written without "." or exponent is an int,
    anything else (3.0, -7.0, 0.0, 2.5) is a double -- the inputs rely on
    that distinction (claims "ratio": 3.0 vs "level": 3), so parse the claims
    preserving the lexeme (Foundation's JSONSerialization does not).
  * "agree" is true when both outcomes are values and equal, or both are
    errors (messages are never compared).
  * "expected" uses the outcome encoding; an expected error's message is only
    a hint (compare "error" vs "value", not the text).  "ruling" is "agree"
    when the expected outcome equals both library outcomes, else a short
    reason with its cel-spec citation (or "Gatehouse" for a decision where
    the spec is silent).
"""

import base64
import json
import math
import os
import random
import select
import subprocess
import sys
import time

SEED = 20240611
CASE_TIMEOUT_SECONDS = 10.0

# ---------------------------------------------------------------------------
# Worker side: evaluates one case with one library and encodes the outcome.
# ---------------------------------------------------------------------------


def _short(message, limit=160):
    text = " ".join(str(message).split())
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _encode_double(x):
    if math.isnan(x):
        return {"double": "NaN"}
    if math.isinf(x):
        return {"double": "Infinity" if x > 0 else "-Infinity"}
    return {"double": repr(float(x))}


def _encode_string(s):
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        # Lone UTF-16 surrogates: not a valid CEL string (langdef: "Strings are
        # valid sequences of Unicode code points"); reported with their code
        # points so the JSON stays valid UTF-8.
        return {"invalid_string": ["U+%04X" % ord(c) for c in s]}
    return {"string": s}


def _canon(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _encode_map(entries):
    pairs = [[k, v] for k, v in entries]
    pairs.sort(key=_canon)
    return {"map": pairs}


def _cel_literal(value, type_name):
    """A CEL literal denoting a map key we got back from the `cel` library."""
    if type_name == "bool":
        return "true" if value else "false"
    if type_name == "int":
        return str(int(value))
    if type_name == "uint":
        return "%du" % int(value)
    if type_name == "string":
        return json.dumps(value, ensure_ascii=False)  # JSON escapes are valid CEL escapes
    raise ValueError("unexpected map key type %r" % type_name)


class CelRustWorker:
    """`common-expression-language` (module `cel`, Rust cel crate bindings).

    How results come back to Python (found by inspection, cel 0.10.0):
      * int AND uint are both returned as a plain Python `int`;
      * string AND type values are both returned as a plain Python `str`
        (a type value comes back as its name, e.g. type(1) -> "int");
      * double -> float, bool -> bool, bytes -> bytes, null -> None,
        list -> list, map -> dict (a map's iteration order is a Rust HashMap
        order and is NOT stable between processes).
    Because int/uint and string/type are indistinguishable, every `int` or
    `str` found in a result is disambiguated by evaluating a second
    expression with the same library and context: `type(<path>)`, where
    <path> is `(<expr>)` followed by the index operations that lead to the
    value (`(<expr>)[0]`, `(<expr>)["k"]`, `(<expr>)[3u]`, ...).  Map keys
    that are Python ints are disambiguated with
    `(<path>).filter(k, k == <n>).map(k, type(k))`.
    """

    def __init__(self):
        import cel  # noqa: F401

        self.cel = cel

    def _eval(self, text, ctx):
        return self.cel.evaluate(text, ctx)

    def _type_of(self, path, ctx):
        t = self._eval("type(%s)" % path, ctx)
        if not isinstance(t, str):
            raise ValueError("type() probe returned %r" % (t,))
        return t

    def _encode(self, value, path, ctx):
        if value is None:
            return {"null": None}
        if isinstance(value, bool):
            return {"bool": value}
        if isinstance(value, int):
            t = self._type_of(path, ctx)
            if t not in ("int", "uint"):
                raise ValueError("int value with CEL type %r" % t)
            return {t: str(value)}
        if isinstance(value, float):
            return _encode_double(value)
        if isinstance(value, str):
            t = self._type_of(path, ctx)
            if t == "string":
                return _encode_string(value)
            if t == "type":
                return {"type": value}
            raise ValueError("str value with CEL type %r" % t)
        if isinstance(value, (bytes, bytearray)):
            return {"bytes": base64.b64encode(bytes(value)).decode("ascii")}
        if isinstance(value, (list, tuple)):
            return {"list": [self._encode(v, "(%s)[%d]" % (path, i), ctx) for i, v in enumerate(value)]}
        if isinstance(value, dict):
            # Python dicts merge keys that compare equal (1 == 1u == true in
            # Python), so make sure no CEL key was lost in the conversion.
            if self._eval("size(%s)" % path, ctx) != len(value):
                raise ValueError("map keys collapsed in the Python conversion")
            entries = []
            for k, v in value.items():
                if isinstance(k, bool):
                    kt = "bool"
                elif isinstance(k, int):
                    kts = self._eval("(%s).filter(k, k == %d).map(k, type(k))" % (path, k), ctx)
                    if len(kts) != 1 or kts[0] not in ("int", "uint"):
                        raise ValueError("cannot type map key %r: %r" % (k, kts))
                    kt = kts[0]
                elif isinstance(k, str):
                    kt = "string"
                else:
                    raise ValueError("unexpected map key %r" % (k,))
                lit = _cel_literal(k, kt)
                enc_k = {"bool": k} if kt == "bool" else ({kt: str(k)} if kt in ("int", "uint") else {"string": k})
                entries.append((enc_k, self._encode(v, "(%s)[%s]" % (path, lit), ctx)))
            return _encode_map(entries)
        raise ValueError("unexpected result type %s" % type(value).__name__)

    def run(self, expr, claims, request):
        ctx = {"claims": claims, "request": request}
        try:
            value = self._eval(expr, ctx)
        except BaseException as e:  # includes pyo3 PanicException
            if isinstance(e, KeyboardInterrupt):
                raise
            return {"error": _short("%s: %s" % (type(e).__name__, e))}
        try:
            return {"value": self._encode(value, "(%s)" % expr, ctx)}
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                raise
            return {"error": _short("ENCODING PROBE FAILED %s: %s" % (type(e).__name__, e)), "probe_failed": True}


class CelPyWorker:
    """`cel-python` (module `celpy`, pure Python).

    Results are celpy.celtypes values, which keep the CEL type exactly:
    IntType/UintType/DoubleType/BoolType/StringType/BytesType/ListType/
    MapType, None for null, and Python classes for type values (IntType for
    `int`, NoneType for `null_type`, TypeType for `type`, ...).  Inputs are
    converted with celpy.json_to_cel (Python int -> IntType, float ->
    DoubleType, ...).  celpy sometimes returns a CELEvalError object as the
    result instead of raising it; both count as an error.
    """

    def __init__(self):
        import logging

        logging.disable(logging.CRITICAL)
        import celpy
        from celpy import celtypes

        self.celpy = celpy
        self.ct = celtypes
        self.env = celpy.Environment()
        ct = celtypes
        self.type_names = {
            ct.IntType: "int",
            ct.UintType: "uint",
            ct.DoubleType: "double",
            ct.BoolType: "bool",
            ct.StringType: "string",
            ct.BytesType: "bytes",
            ct.ListType: "list",
            ct.MapType: "map",
            ct.TypeType: "type",
            type(None): "null_type",
            ct.NullType: "null_type",
        }

    def _encode(self, value):
        ct = self.ct
        if isinstance(value, BaseException):
            raise _CelPyErrorValue(value)
        if value is None or isinstance(value, ct.NullType):
            return {"null": None}
        if isinstance(value, type):
            name = self.type_names.get(value)
            if name is None:
                raise ValueError("unknown type value %r" % (value,))
            return {"type": name}
        if isinstance(value, ct.BoolType) or isinstance(value, bool):
            return {"bool": bool(value)}
        if isinstance(value, ct.UintType):
            return {"uint": str(int(value))}
        if isinstance(value, int):  # IntType (plain int treated as int)
            return {"int": str(int(value))}
        if isinstance(value, float):
            return _encode_double(float(value))
        if isinstance(value, str):
            return _encode_string(str(value))
        if isinstance(value, (bytes, bytearray)):
            return {"bytes": base64.b64encode(bytes(value)).decode("ascii")}
        if isinstance(value, (list, tuple)):
            return {"list": [self._encode(v) for v in value]}
        if isinstance(value, dict):
            return _encode_map([(self._encode(k), self._encode(v)) for k, v in value.items()])
        raise ValueError("unexpected result type %s" % type(value).__name__)

    def run(self, expr, claims, request):
        celpy = self.celpy
        try:
            ast = self.env.compile(expr)
            prg = self.env.program(ast)
            activation = {"claims": celpy.json_to_cel(claims), "request": celpy.json_to_cel(request)}
            value = prg.evaluate(activation)
            return {"value": self._encode(value)}
        except _CelPyErrorValue as e:
            err = e.args[0]
            return {"error": _short("%s: %s" % (type(err).__name__, err.args[0] if err.args else err))}
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                raise
            msg = e.args[0] if getattr(e, "args", None) else e
            return {"error": _short("%s: %s" % (type(e).__name__, msg))}


class _CelPyErrorValue(Exception):
    pass


def worker_main(lib):
    worker = CelRustWorker() if lib == "cel" else CelPyWorker()
    out = sys.stdout
    for line in sys.stdin:
        req = json.loads(line)
        res = worker.run(req["expression"], req["claims"], req["request"])
        out.write(json.dumps(res, ensure_ascii=True) + "\n")
        out.flush()


# ---------------------------------------------------------------------------
# Parent side: one subprocess per library (isolation against hangs/crashes).
# ---------------------------------------------------------------------------


class Worker:
    def __init__(self, lib):
        self.lib = lib
        self.proc = None
        self.buf = b""
        self.failures = 0

    def start(self):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", self.lib],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.buf = b""

    def send(self, case):
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        msg = {"expression": case["expression"], "claims": case["claims"], "request": case["request"]}
        try:
            self.proc.stdin.write((json.dumps(msg, ensure_ascii=True) + "\n").encode("ascii"))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def receive(self, deadline):
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            remaining = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                if remaining > 0:
                    continue
                self._kill()
                return {"error": "harness: timeout"}
            chunk = os.read(fd, 65536)
            if not chunk:
                self._kill()
                return {"error": "harness: interpreter crashed"}
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def _kill(self):
        self.failures += 1
        try:
            self.proc.kill()
            self.proc.wait()
        except Exception:
            pass
        self.proc = None

    def close(self):
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except Exception:
                self.proc.kill()


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

CLAIM_SETS = {
    # 0: the "typical admin" token; also the default for hand-written cases
    "admin": {
        "sub": "user-1",
        "tenant": "acme",
        "org": "acme",
        "groups": ["admin", "dev", "ops"],
        "level": 3,
        "score": 1.5,
        "ratio": 3.0,
        "n": None,
        "active": True,
        "name": "José Müller",
        "scope": "read write",
        "profile": {"dept": "eng", "tags": ["a", "b"], "manager": {"id": 7, "name": "Ann"}},
    },
    "empty": {
        "sub": "user-2",
        "tenant": "globex",
        "org": "globex",
        "groups": [],
        "level": 0,
        "score": 0.0,
        "ratio": -7.0,
        "n": None,
        "active": False,
        "name": "",
        "scope": "",
        "profile": {},
    },
    "single": {
        "sub": "user-3",
        "tenant": "acme",
        "org": "acme-eu",
        "groups": ["adm"],
        "level": -7,
        "score": 3.0,
        "ratio": 1.5,
        "n": None,
        "active": True,
        "name": "Zoë",
        "scope": "read",
        "profile": {"dept": "ops", "tags": [], "manager": {"id": 0, "name": None}},
    },
    "ten": {
        "sub": "user-4",
        "tenant": "initech",
        "org": "initech",
        "groups": ["g0", "g1", "admin", "g3", "dev", "g5", "g6", "adm-x", "g8", "ops"],
        "level": 10,
        "score": -7.5,
        "ratio": 0.0,
        "n": None,
        "active": True,
        "name": "Peter",
        "scope": "read write admin",
        "profile": {"dept": "eng", "tags": ["x"], "manager": {"id": 7.0, "name": "Bill"}},
    },
    "unicode": {
        "sub": "ünï-5",
        "tenant": "ünïcode",
        "org": "ünïcode",
        "groups": ["café", "日本", "admin"],
        "level": 1,
        "score": 2.25,
        "ratio": 3,
        "n": None,
        "active": False,
        "name": "café ☕ 😀",
        "scope": "read",
        "profile": {"dept": "ünï", "tags": ["é"], "manager": {"id": 3, "name": "Ünal"}},
    },
    "sparse": {"sub": "user-6"},
    "nulls": {
        "sub": "user-7",
        "tenant": None,
        "org": None,
        "groups": None,
        "level": None,
        "score": None,
        "ratio": None,
        "n": None,
        "active": None,
        "name": None,
        "scope": None,
        "profile": None,
    },
    "mixed": {
        "sub": "user-8",
        "tenant": "acme",
        "org": "acme",
        "groups": ["admin", "dev"],
        "level": 3.0,
        "score": -7,
        "ratio": 1.5,
        "n": None,
        "active": "true",
        "name": "Mixed",
        "scope": "write",
        "profile": {"dept": "eng", "tags": ["a", 1, True, None, 2.5], "manager": {"id": "7", "name": "Eve"}},
        "roles": {"admin": True, "dev": False},
        "numbers": [1, 2.0, -3, 0],
    },
}

REQUESTS = [
    {
        "method": "GET",
        "path": "/api/v1/users",
        "host": "api.example.com",
        "headers": {
            "x-org": "acme",
            "x-request-id": "abc-123",
            "content-type": "application/json",
            "x-count": "42",
        },
    },
    {
        "method": "POST",
        "path": "/admin/settings",
        "host": "admin.example.com",
        "headers": {"x-org": "globex", "authorization": "Bearer abc.def", "x-count": "-1"},
    },
    {"method": "HEAD", "path": "/", "host": "example.com", "headers": {}},
    {
        "method": "DELETE",
        "path": "/api/v1/items/9",
        "host": "api.example.com",
        "headers": {"x-org": "ünïcode", "x-forwarded-for": "10.0.0.1, 10.0.0.2", "x-count": "7.5"},
    },
]

# ---------------------------------------------------------------------------
# (a) hand-written targeted cases.  Each entry is an expression, optionally
# with the claim-set name and request index to use (default: "admin", 0).
# ---------------------------------------------------------------------------

HAND = [
    # --- literals -----------------------------------------------------------
    "123",
    "0x1F",
    "0xff",
    "0X1F",
    "1u",
    "1U",
    "0x10u",
    "18446744073709551615u",
    "18446744073709551616u",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "-9223372036854775809",
    "1.5",
    "1e3",
    "1E-2",
    ".5",
    "2.5e+2",
    "-0.0",
    "0.1 + 0.2",
    "1e308 * 10.0",
    '"abc"',
    "'abc'",
    '"""multi\nline"""',
    "'''x''x'''",
    "'\"\"'",
    'r"\\d+\\n"',
    "R'\\n'",
    '"\\x41\\u00e9\\U0001F600\\101"',
    '"\\a\\b\\f\\n\\r\\t\\v\\\\\\?\\"\\\'\\`"',
    '"\\xFF"',
    '"\\377"',
    '"\\303\\277"',
    'b"\\303\\277"',
    'b"\\377"',
    'b"\\xff"',
    'b"ÿ"',
    "b'abc'",
    'br"\\n"',
    'B"x"',
    '"\\s"',
    '"\\uD83D"',
    "true",
    "false",
    "null",
    "[]",
    '[1, "a", true, null, 1.5, 2u, b"x"]',
    "[1, 2,]",
    "{}",
    '{"a": 1, "b": [2, {"c": 3u}]}',
    '{3: "x", 2u: "y", true: "z", "k": null}',
    "{true: 1, 2: 2, 5u: 3}[true]",
    "{0: 1, 0u: 2}[0.0]",
    "{true: 1, false: 2, true: 3}[true]",
    '{"a": 1, "a": 2}',
    '{1.5: "x"}',
    "{[1]: 2}",
    "1 + // comment\n 2",
    # --- arithmetic -----------------------------------------------------------
    "!true",
    "!!false",
    "-5",
    "--5",
    "-(-9223372036854775807 - 1)",
    "-(-9223372036854775808)",
    "(-9223372036854775808) * -1",
    "1 + 2 * 3 - 4 / 2 % 3",
    "7 / 2",
    "-7 / 2",
    "-7 % 2",
    "7 % -2",
    "7u / 2u",
    "7u % 2u",
    "7.0 / 2.0",
    "1 / 0",
    "1 % 0",
    "1u / 0u",
    "1u % 0u",
    "1.0 / 0.0",
    "-1.0 / 0.0",
    "0.0 / 0.0",
    "5.5 % 2.0",
    "-9223372036854775808 / -1",
    "-9223372036854775808 % -1",
    "9223372036854775807 + 1",
    "-9223372036854775808 - 1",
    "9223372036854775807 * 2",
    "0u - 1u",
    "18446744073709551615u + 1u",
    "4294967296 * 4294967296",
    "-1u",
    "1 + 1u",
    "1 + 1.0",
    '1 + "a"',
    '"a" + "b"',
    'b"a" + b"b"',
    '[1] + [2, "x"]',
    '{"a": 1} + {"b": 2}',
    "claims.level * 2 + 1",
    "claims.score * 2.0",
    "claims.level + claims.score",
    # --- comparison / equality ----------------------------------------------
    '"abc" < "abd"',
    '"a" < "ab"',
    '"é" > "z"',
    'b"a" < b"b"',
    "false < true",
    "1 < 1.5",
    "1u < 2",
    "-1 < 1u",
    "2.0 > 1u",
    "1 <= 1.0",
    "18446744073709551615u > 9223372036854775807",
    '1 < "a"',
    "null < null",
    "[1] < [2]",
    "3 == 3.0",
    "1 == 1u",
    "dyn(1) == 1.0",
    "1.0 == 1u",
    "1 != 1.0",
    "0.0 == -0.0",
    "0.0 / 0.0 == 0.0 / 0.0",
    "dyn(1) == 0.0 / 0.0",
    "null == null",
    "null == 0",
    '"a" == 1',
    'b"a" == "a"',
    "[1, 2] == [1, 2.0]",
    '{"a": 1} == {"a": 1u}',
    '[1] == ["1"]',
    '{1: "a"} == {1u: "a"}',
    "{1: 1.0, 2u: 3u} == {1u: 1, 2: 3.0}",
    "{'k': 'v', 1: 1} == {'k': 'v', 1: 'v1'}",
    "[] == {}",
    "claims.level == 3",
    "claims.ratio == 3",
    "claims.n == null",
    "claims.groups == ['admin', 'dev', 'ops']",
    "claims.profile == {'dept': 'eng', 'tags': ['a', 'b'], 'manager': {'id': 7, 'name': 'Ann'}}",
    # --- in --------------------------------------------------------------------
    "1 in [1, 2]",
    "1.0 in [1, 2]",
    "2u in [1, 2]",
    '"a" in ["a"]',
    '"a" in {"a": 1}',
    '1u in {1: "x"}',
    '"b" in {"a": 1}',
    '1 in "abc"',
    '"x" in []',
    "null in [null]",
    "[1] in [[1]]",
    "'elem' in [1u, 'str', 2, b'bytes']",
    "'key' in {1u: 'str', 2: b'bytes'}",
    '"admin" in claims.groups',
    '"dept" in claims.profile',
    # --- ternary / logic -------------------------------------------------------
    'true ? 1 : "a"',
    "false ? 1 / 0 : 2",
    "1 ? 2 : 3",
    "claims.missing ? 1 : 2",
    "true ? false ? 1 : 2 : 3",
    "claims.missing == 1 || true",
    "true || claims.missing == 1",
    "false && claims.missing == 1",
    "claims.missing == 1 && false",
    "claims.missing == 1 && true",
    "claims.missing == 1 || false",
    "1 / 0 == 0 || true",
    "1 / 0 == 0 || 1 % 0 == 0",
    'false || "a"',
    "true && 1",
    "1 || true",
    "false && 1",
    "!1",
    "!claims.missing",
    "'less filling' && 'tastes great'",
    "dyn([1, 2, 3][3]) || true",
    "dyn([1, 2, 3][3]) && false",
    "dyn([1, 2, 3][3]) && true",
    "true && true && false",
    "claims.active && claims.level > 2",
    # --- indexing / selection ------------------------------------------------
    "[1, 2, 3][0]",
    "[1, 2, 3][3]",
    "[1, 2, 3][-1]",
    "[1, 2, 3][1u]",
    "[1, 2, 3][1.0]",
    "[1, 2, 3][1.5]",
    '"abc"[0]',
    '{"a": 1}["a"]',
    '{"a": 1}["b"]',
    '{1: "x"}[1]',
    '{1: "x"}[1u]',
    '{1: "x"}[1.0]',
    '{1u: "x"}[1]',
    "{1u: 1.0, 2: 2.0, 3u: 3.0}[3.0]",
    "{1u: 1.0, 2: 2.0, 3u: 3.0}[3.1]",
    "{1u: 1.0, 2: 2.0, 3u: 3.0}[2u]",
    "{1u: 1.0, 2: 2.0, 3u: 3.0}[1]",
    "3.0 in {1: 1, 2: 2, 3u: 3} && 2u in {1u: 1, 2: 2} && 1 in {1u: 1, 2: 2}",
    "3.1 in {1: 1, 2: 2, 3u: 3}",
    "{true: 1}[true]",
    '{"a": {"b": 2}}.a.b',
    '{"a": 1}.b',
    "[1].a",
    'claims["level"]',
    "claims.profile.manager.id",
    'claims.profile["tags"][1]',
    "claims.missing",
    "claims.n",
    "claims.groups[claims.level - 1]",
    # --- has ---------------------------------------------------------------------
    "has(claims.n)",
    "has(claims.missing)",
    "has(claims.profile.dept)",
    "has(claims.profile.missing)",
    "has(claims.missing.x)",
    "has(claims.groups.x)",
    "has(claims.level.x)",
    'has({"a": 1}.a)',
    'has(claims["n"])',
    "has(request.headers.authorization)",
    # --- macros ------------------------------------------------------------------
    "[1, 2, 3].all(x, x > 0)",
    "[].all(x, false)",
    "[1, 0, 2].all(x, 2 / x > 0)",
    "[0, -1].all(x, 2 / x > 0)",
    "[-1, 0].all(x, 2 / x > 0)",
    '[1, "a"].all(x, x > 0)',
    "[0, 1].exists(x, 1 / x == 1)",
    "[1, 2, 3].all(e, 6 / (2 - e) == 6)",
    "[1, 2, 3].exists(e, e / 0 == 17)",
    "[1, 'foo', 3].exists(e, e != '1')",
    "[1, 'foo', 3].exists(e, e == '10')",
    "[1, 'foo', 3].all(e, e == 1)",
    "[1, 'foo', 3].all(e, e % 2 == 1)",
    "[3, 2, 1, 0].exists_one(n, 12 / n > 1)",
    "[3, 2, 1, 0].filter(n, 12 / n > 4)",
    "[1, 0].exists(x, 1 / x == 1)",
    "[0].exists(x, 1 / x == 1)",
    "[].exists(x, true)",
    "[1, 2, 2].exists_one(x, x == 2)",
    "[1, 2].exists_one(x, x == 2)",
    "[0, 1].exists_one(x, 1 / x == 1)",
    '{"a": 1, "b": 2}.all(k, k != "c")',
    '{"a": 1, "b": 2}.exists(k, k == "b")',
    '{"a": 1, "b": 2}.exists_one(k, k == "a")',
    "[1, 2, 3].map(x, x * 2)",
    "[1, 2, 3, 4].map(x, x % 2 == 0, x * 10)",
    "[1, 2, 3].filter(x, x > 1)",
    '{"a": 1, "b": 2}.filter(k, k == "a")',
    '{"only": 1}.map(k, k + "!")',
    '{"a": 1, "b": 2}.map(k, k).size()',
    "[[1, 2], [3]].map(l, l.map(x, x + 1))",
    "[1, 2].map(x, x, x)",
    "[1].exists(x, [2].exists(x, x == 2))",
    "[1, 2, 3].map(x, x / (x - 2))",
    "[1, 2, 3].filter(x, x / (x - 2) > 0)",
    'claims.groups.exists(g, g == "admin")',
    "claims.groups.all(g, size(g) > 1)",
    "claims.groups.exists_one(g, g.startsWith(\"ad\"))",
    "claims.groups.map(g, g + \"!\")",
    'claims.groups.map(g, g.startsWith("d") || g.startsWith("o"), size(g))',
    'claims.groups.filter(g, g != "dev")',
    "claims.missing.exists(x, true)",
    'claims.profile.exists(k, k == "dept")',
    "claims.profile.manager.all(k, k.size() > 1)",
    '"abc".all(c, true)',
    # --- size --------------------------------------------------------------------
    'size("café")',
    '"café".size()',
    'size(b"caf\\xc3\\xa9")',
    "size([1, 2])",
    'size({"a": 1})',
    "size(1)",
    'size("")',
    'size("😀")',
    'size("\\U0001F600")',
    "size(claims.name)",
    "size(claims.groups)",
    "claims.groups.size()",
    "size(null)",
    "size(claims)",
    # --- strings -----------------------------------------------------------------
    '"hello".startsWith("he")',
    '"hello".endsWith("lo")',
    '"hello".contains("ell")',
    '"hello".contains("")',
    '"".startsWith("")',
    '"café".endsWith("é")',
    '"abc".startsWith(1)',
    '"abc".contains(null)',
    'startsWith("abc", "a")',
    'claims.name.contains("Mü")',
    # --- matches (RE2) -----------------------------------------------------------
    '"foobar".matches("foo.*")',
    'matches("foobar", "^bar")',
    '"foobar".matches("bar")',
    '"foobar".matches("^foo$")',
    '"abc123".matches("[0-9]+")',
    '"abc".matches("^[a-c]{3}$")',
    '"cat".matches("^(cat|dog)$")',
    '"cats".matches("^(cat|dog)$")',
    '"Cat".matches("(?i)^cat$")',
    '"a.b".matches(r"^a\\.b$")',
    '"axb".matches("^a\\\\.b$")',
    '"a\\nb".matches("a.b")',
    '"héllo".matches("^h.llo$")',
    '"abc".matches("\\\\d")',
    '"abc".matches("[")',
    '"aaa".matches("^a{2,}$")',
    '"é".matches("^\\\\pL$")',
    '"aa".matches("(a)\\\\1")',
    '"ab".matches("a(?=b)")',
    '"".matches("")',
    '"a+b".matches("a\\\\+b")',
    '"10.0.0.1".matches("^10\\\\.(\\\\d{1,3}\\\\.){2}\\\\d{1,3}$")',
    '"x_1".matches("^\\\\w+$")',
    'claims.sub.matches("^user-[0-9]+$")',
    # --- conversions -----------------------------------------------------------
    'int("42")',
    'int("-42")',
    'int("x")',
    'int(" 42")',
    'int("0x10")',
    "int(3.9)",
    "int(-3.9)",
    "int(1e20)",
    "int(9223372036854775807u)",
    "int(9223372036854775808u)",
    "int(true)",
    "int(claims.level)",
    "int(claims.score)",
    "uint(-1)",
    "uint(3.7)",
    'uint("42")',
    "uint(42)",
    "uint(-0.5)",
    "uint(1e20)",
    "double(1)",
    "double(1u)",
    'double("1.5")',
    'double("1e3")',
    'double("x")',
    "double(true)",
    "string(1)",
    "string(1u)",
    "string(1.5)",
    "string(-4.5)",
    "string(-4.5e-3)",
    "string(123.456)",
    "string(1e21)",
    "string(false)",
    "string(true)",
    'string(b"abc")',
    'string(b"\\xff")',
    "string(b'\\000\\xff')",
    "string(null)",
    'string("x")',
    "string([1])",
    'bytes("héllo")',
    'bytes(b"x")',
    "bytes(1)",
    'bool("true")',
    'bool("FALSE")',
    'bool("yes")',
    "bool('t')",
    "bool('0')",
    "bool('TrUe')",
    "bool(true)",
    "bool(1)",
    'dyn("a")',
    "dyn([1])[0]",
    "type(dyn(1u))",
    # --- types -------------------------------------------------------------------
    "type(1)",
    "type(1u)",
    "type(1.0)",
    'type("")',
    'type(b"")',
    "type(true)",
    "type(null)",
    "type([])",
    "type({})",
    "type(int)",
    "type(type)",
    "type(type(1))",
    "type(1) == int",
    "type(1u) == uint",
    "type(1) == type(2)",
    "type(1) == string",
    "type(type(1)) == type(string)",
    "int == int",
    "type(1) in [int, double]",
    "int < uint",
    "type(claims.level) == int",
    "type(claims.ratio)",
    "type(claims.n) == null_type",
    "type(claims) == map",
    "type(claims.groups) == list",
    "[int, string, null_type, bool, double, uint, bytes, type, list, map]",
    '{"t": type(1), "u": type(1u)}',
    # --- value-typed results -------------------------------------------------------
    '[1u, 2, "a", b"b", null, 1.5, [1u], {"k": 2u}]',
    '{1u: 1, 2: 2u, "s": [type(1u)]}',
    '{"😀": 1u, "a\\nb": [2u, type(1u)], "q": {"y": 1u, 5u: -1, -5: 2u, false: "s"}}',
    "claims",
    "claims.profile",
    "request",
    # --- request -----------------------------------------------------------------
    ('request.method == "GET"', "admin", 0),
    ('request.path.startsWith("/api/")', "admin", 0),
    ('request.host.endsWith(".example.com")', "admin", 1),
    ('request.headers["x-org"] == claims.org', "admin", 0),
    ('request.headers["x-org"] == claims.org', "unicode", 3),
    ('request.headers["x-missing"]', "admin", 0),
    ('"x-org" in request.headers', "admin", 2),
    ("has(request.headers.authorization)", "admin", 1),
    ('request.headers["x-request-id"].matches("^[a-z]+-[0-9]+$")', "admin", 0),
    ('int(request.headers["x-count"]) > 40', "admin", 0),
    ('int(request.headers["x-count"]) > 40', "admin", 3),
    ('double(request.headers["x-count"])', "admin", 3),
    ('request.method in ["GET", "HEAD"]', "admin", 2),
    ("size(request.headers)", "admin", 3),
    ('request.headers["x-forwarded-for"].contains("10.0.0.2")', "admin", 3),
    ('request.path.matches("^/api/v[0-9]+/items/[0-9]+$")', "admin", 3),
    ("request.headers", "admin", 1),
    # --- claim-set specific edges ---------------------------------------------------
    ("has(claims.n)", "sparse", 0),
    ("claims.tenant", "sparse", 0),
    ("has(claims.tenant) && claims.tenant == 'acme'", "sparse", 0),
    ("claims.groups.exists(g, g == 'admin')", "nulls", 0),
    ("claims.level > 1", "nulls", 0),
    ("claims.level == null", "nulls", 0),
    ("claims.level == 3", "mixed", 0),
    ("claims.level > 2", "mixed", 0),
    ("claims.level + 1", "mixed", 0),
    ("claims.profile.tags", "mixed", 0),
    ("claims.profile.tags.exists(t, t == 1)", "mixed", 0),
    ("claims.profile.tags.all(t, t != null)", "mixed", 0),
    ("claims.roles.admin", "mixed", 0),
    ("claims.roles.filter(r, claims.roles[r])", "mixed", 0),
    ("claims.numbers.map(x, x * 2)", "mixed", 0),
    ("claims.numbers.filter(x, x > 0)", "mixed", 0),
    ("size(claims.name)", "unicode", 0),
    ("claims.name.startsWith('café')", "unicode", 0),
    ("claims.groups.exists(g, g.matches('^日'))", "unicode", 0),
    ("claims.groups", "ten", 0),
    ("size(claims.groups) > 2", "ten", 0),
    ("claims.groups.filter(g, g.startsWith('g'))", "ten", 0),
    ("claims.groups.exists_one(g, g == 'admin')", "ten", 0),
    ("claims.profile.manager.id == 7", "ten", 0),
    ("claims.groups.all(g, false)", "empty", 0),
    ("claims.groups.exists(g, true)", "empty", 0),
    ("claims.score == 0", "empty", 0),
    ("claims.ratio == -7", "empty", 0),
    ("claims.groups[0]", "empty", 0),
]


# Hand-written cases added to pin the Gatehouse decisions where the spec is
# silent (their expected outcomes are in RULINGS below).
HAND += [
    "string(100.0)",
    "string(1e6)",
    "string(0.0001)",
    "string(0.00001)",
    "string(1.5e300)",
    "string(-0.0)",
    "string(0.1 + 0.2)",
    "string(1e20)",
    'int("+5")',
    'int("-5")',
    'uint("+5")',
    'double("Infinity")',
    'double("-Infinity")',
    'double("NaN")',
    'double(" 1")',
    'bool("1")',
    'bool("T")',
    'bool("True")',
    'bool("f")',
    'bool("False")',
    '-"a"',
    "1 || false",
    'endsWith("abc", "c")',
    'contains("abc", "b")',
    "has(claims.n.x)",
    'size("abc") == "abc".size()',
]

# ---------------------------------------------------------------------------
# Expected outcomes of the hand-written cases (what a spec-conforming
# evaluator -- Gatehouse's -- must produce).  A hand-written case whose two
# library outcomes agree is expected to produce that outcome ("agree"),
# unless listed here.  Every listed expression maps to (expected, ruling):
# expected is "cel" / "celpy" (that library's outcome is the spec's answer)
# or an outcome written out.  A case whose libraries disagree and which is
# not listed gets no "expected" (and fails --check).
# ---------------------------------------------------------------------------


def _v(kind_, value):
    return {"value": {kind_: value}}


def _i(n):
    return _v("int", str(n))


def _d(x):
    return {"value": _encode_double(x)}


def _s(s):
    return _v("string", s)


def _b(b):
    return _v("bool", b)


def _err(msg):
    return {"error": msg}


R_HETERO = "heterogeneous numeric equality/ordering: langdef L1028-1056, L1617; comparisons.textproto:283, 1236"
R_KINDS = "equality across kinds is false: langdef L1034-1037; comparisons.textproto:295"
R_IN = "heterogeneous numeric membership: langdef L1068-1073; lists.textproto:187-215"
R_MAPKEY = "heterogeneous numeric map key: langdef L1059-1066; fields.textproto:36-55"
R_MAPIN = "heterogeneous numeric map key: fields.textproto:665, 671"
R_MAPEQ = "map equality with numeric keys: langdef L1059-1066, L1087-1091; comparisons.textproto:253"
R_NAN = "NaN is unequal to everything: langdef L1075-1076; comparisons.textproto:80, 85"
R_IEEE = "IEEE 754 division: langdef L1075; fp_math.textproto:93"
R_DUPKEY = "duplicate map key: langdef L360-361; fields.textproto:621"
R_NEGOVF = "int negation overflow: langdef L1169; integer_math.textproto:222"
R_ARITH = "no mixed-type arithmetic: langdef L229-233"
R_LOGIC = "logical operands must be bool: langdef L1354, L1371; logic.textproto:101, 169"
R_CHECK = "literal operand fits no overload (checker): langdef L229-233"
R_HAS = "has() on a non-map is an error: langdef L760"
R_ABSORB = "macro errors absorbed when another element decides: langdef L684-692; macros.textproto:102"
R_MAP3 = "3-argument map: langdef L706"
R_SIZE = "size counts code points: langdef L1840-1841; string.textproto:31"
R_CONV = "no such conversion overload: langdef L2019-2215"
R_BOOL = "bool(string) as Go ParseBool: langdef L2025-2026; conversions.textproto:516-561"
R_STRD = "string(double) shortest round-trip, exponent form below 1e-4 / from 1e21: Gatehouse"
R_INTS = "int(string) is Go ParseInt base 10: Gatehouse (cel-go string.go:103)"
R_RECV = "receiver-style only: langdef L1003-1006, L1831"

RULINGS = {
    # literals / parsing
    '"""multi\nline"""': ("cel", "triple-quoted strings keep newlines: langdef L255-256; parse.textproto:257"),
    '"\\a\\b\\f\\n\\r\\t\\v\\\\\\?\\"\\\'\\`"': ("cel", "escapes \\? and \\`: langdef L115; parse.textproto:163"),
    '"\\s"': ("cel", "invalid escape is a parse error: langdef L320"),
    '"\\uD83D"': ("cel", "surrogate escape is a parse error: langdef L322"),
    "[1, 2,]": ("cel", "trailing comma: langdef L44"),
    "{true: 1, false: 2, true: 3}[true]": ("celpy", R_DUPKEY),
    '{"a": 1, "a": 2}': ("celpy", R_DUPKEY),
    '{1.5: "x"}': ("cel", "double map key: langdef L341; fields.textproto:599"),
    # integer / double arithmetic
    "-(-9223372036854775807 - 1)": ("celpy", R_NEGOVF),
    "-(-9223372036854775808)": ("celpy", R_NEGOVF),
    "-9223372036854775808 % -1": ("cel", "int modulo overflow: Gatehouse (cel-go overflow.go:104)"),
    "1 + 1u": ("cel", R_ARITH),
    "-1.0 / 0.0": ("cel", R_IEEE),
    "0.0 / 0.0": ("cel", R_IEEE),
    "0.0 / 0.0 == 0.0 / 0.0": ("cel", R_NAN),
    "dyn(1) == 0.0 / 0.0": ("cel", R_NAN),
    # heterogeneous equality / ordering / membership
    "1 < 1.5": ("cel", R_HETERO),
    "-1 < 1u": ("cel", R_HETERO),
    "1 <= 1.0": ("cel", R_HETERO),
    "3 == 3.0": ("cel", R_HETERO),
    "1 == 1u": ("cel", R_HETERO),
    "dyn(1) == 1.0": ("cel", R_HETERO),
    "1.0 == 1u": ("cel", R_HETERO),
    "1 != 1.0": ("cel", R_HETERO),
    "[1, 2] == [1, 2.0]": ("cel", R_HETERO),
    '{"a": 1} == {"a": 1u}': ("cel", R_HETERO),
    "claims.ratio == 3": ("cel", R_HETERO),
    "claims.level == 3": ("cel", R_HETERO),
    "claims.profile.manager.id == 7": ("cel", R_HETERO),
    "claims.score == 0": ("cel", R_HETERO),
    "claims.ratio == -7": ("cel", R_HETERO),
    "null == 0": ("cel", R_KINDS),
    '"a" == 1': ("cel", R_KINDS),
    '[1] == ["1"]': ("cel", R_KINDS),
    "{'k': 'v', 1: 1} == {'k': 'v', 1: 'v1'}": ("cel", R_KINDS),
    "[] == {}": ("cel", R_KINDS),
    '{1: "a"} == {1u: "a"}': (_b(True), R_MAPEQ),
    "{1: 1.0, 2u: 3u} == {1u: 1, 2: 3.0}": (_b(True), R_MAPEQ),
    "1.0 in [1, 2]": ("cel", R_IN),
    "2u in [1, 2]": ("cel", R_IN),
    "'elem' in [1u, 'str', 2, b'bytes']": ("cel", "membership across kinds is false: comparisons.textproto:2163"),
    "'key' in {1u: 'str', 2: b'bytes'}": ("cel", "membership across kinds is false: comparisons.textproto:2194"),
    '1u in {1: "x"}': (_b(True), R_MAPIN),
    "3.0 in {1: 1, 2: 2, 3u: 3} && 2u in {1u: 1, 2: 2} && 1 in {1u: 1, 2: 2}": (_b(True), R_MAPIN),
    "3.1 in {1: 1, 2: 2, 3u: 3}": (_b(False), R_MAPIN),
    '{1: "x"}[1u]': (_s("x"), R_MAPKEY),
    '{1: "x"}[1.0]': (_s("x"), R_MAPKEY),
    '{1u: "x"}[1]': (_s("x"), R_MAPKEY),
    "{1u: 1.0, 2: 2.0, 3u: 3.0}[3.0]": (_d(3.0), R_MAPKEY),
    "{1u: 1.0, 2: 2.0, 3u: 3.0}[2u]": (_d(2.0), R_MAPKEY),
    "{1u: 1.0, 2: 2.0, 3u: 3.0}[1]": (_d(1.0), R_MAPKEY),
    "[1, 2, 3][1.0]": (_i(2), "integral double list index: lists.textproto:64 zero_based_double"),
    # logic
    'false || "a"': ("cel", R_LOGIC),
    "true && 1": ("cel", R_LOGIC),
    "1 || true": (_err("no matching overload for _||_ (int, bool)"), R_CHECK + "; logic.textproto no_overload"),
    "false && 1": (_err("no matching overload for _&&_ (bool, int)"), R_CHECK + "; logic.textproto no_overload"),
    "1 || false": (_err("no matching overload for _||_ (int, bool)"), R_CHECK),
    '-"a"': (_err("no matching overload for -_ (string)"), R_CHECK),
    # indexing, has()
    "[1, 2, 3][-1]": ("cel", "list index out of range: langdef L1671; lists.textproto:96"),
    '"abc"[0]': ("cel", "no string indexing: langdef L1665-1720"),
    "has(claims.missing.x)": ("cel", R_HAS),
    "has(claims.groups.x)": ("cel", R_HAS),
    "has(claims.level.x)": ("cel", R_HAS),
    "has(claims.n.x)": (_err("has() on null"), R_HAS),
    'has(claims["n"])': ("cel", "has() needs select notation: langdef L1212-1213"),
    # macros
    "[0, -1].all(x, 2 / x > 0)": ("celpy", R_ABSORB),
    "[0, 1].exists(x, 1 / x == 1)": ("celpy", R_ABSORB),
    "[1, 2, 3].all(e, 6 / (2 - e) == 6)": ("celpy", R_ABSORB),
    "[1, 'foo', 3].exists(e, e == '10')": ("cel", R_KINDS + "; macros.textproto:31"),
    "[1, 2, 3, 4].map(x, x % 2 == 0, x * 10)": ("cel", R_MAP3),
    'claims.groups.map(g, g.startsWith("d") || g.startsWith("o"), size(g))': ("cel", R_MAP3),
    '"abc".all(c, true)': ("cel", "all() on lists and maps only: langdef L1236-1239"),
    "claims.level + 1": ("cel", R_ARITH),
    "claims.numbers.map(x, x * 2)": ("cel", R_ARITH),
    # size() and strings
    'size("café")': ("celpy", R_SIZE),
    '"café".size()': ("celpy", R_SIZE),
    'size("😀")': ("celpy", R_SIZE),
    'size("\\U0001F600")': ("celpy", R_SIZE),
    "size(claims.name)": ("celpy", R_SIZE),
    "size(null)": ("cel", "no size(null) overload: langdef L936-960"),
    'startsWith("abc", "a")': ("cel", R_RECV),
    'endsWith("abc", "c")': (_err("no global endsWith"), R_RECV),
    'contains("abc", "b")': (_err("no global contains"), R_RECV),
    'matches("foobar", "^bar")': ("celpy", "global matches(string, string): langdef L1814"),
    'size("abc") == "abc".size()': (_b(True), "size(x) and x.size(): langdef L1839-1846"),
    # conversions
    'int(" 42")': ("cel", R_INTS),
    'int("0x10")': ("cel", R_INTS),
    'int("+5")': (_i(5), R_INTS),
    'int("-5")': (_i(-5), R_INTS),
    'uint("+5")': (_err("uint() cannot parse '+5'"), "uint(string) is Go ParseUint base 10: Gatehouse"),
    'double("Infinity")': (_d(float("inf")), "double(string) is Go ParseFloat: Gatehouse"),
    'double("-Infinity")': (_d(float("-inf")), "double(string) is Go ParseFloat: Gatehouse"),
    'double("NaN")': (_d(float("nan")), "double(string) is Go ParseFloat: Gatehouse"),
    'double(" 1")': (_err("double() cannot parse ' 1'"), "double(string) is Go ParseFloat: Gatehouse"),
    "int(true)": ("cel", R_CONV),
    "double(true)": ("cel", R_CONV),
    "bool(1)": ("cel", R_CONV),
    "string(null)": ("cel", R_CONV),
    "string([1])": ("cel", R_CONV),
    "uint(-0.5)": ("cel", "uint(double) rejects negatives: Gatehouse (cel-go overflow.go:313)"),
    "string(1e21)": (_s("1e+21"), R_STRD),
    "string(100.0)": (_s("100"), R_STRD),
    "string(1e6)": (_s("1000000"), R_STRD),
    "string(0.0001)": (_s("0.0001"), R_STRD),
    "string(0.00001)": (_s("1e-05"), R_STRD),
    "string(1.5e300)": (_s("1.5e+300"), R_STRD),
    "string(-0.0)": (_s("-0"), R_STRD),
    "string(0.1 + 0.2)": (_s("0.30000000000000004"), R_STRD),
    "string(1e20)": (_s("100000000000000000000"), R_STRD),
    "string(false)": (_s("false"), "string(bool): langdef L2146-2147"),
    "string(true)": (_s("true"), "string(bool): langdef L2146-2147"),
    'string(b"\\xff")': ("celpy", "invalid UTF-8: langdef L2152-2153; conversions.textproto:284"),
    "string(b'\\000\\xff')": ("celpy", "invalid UTF-8: langdef L2152-2153; conversions.textproto:284"),
    'bool("true")': ("celpy", R_BOOL),
    'bool("FALSE")': ("celpy", R_BOOL),
    "bool('t')": ("celpy", R_BOOL),
    "bool('0')": ("celpy", R_BOOL),
    'bool("1")': (_b(True), R_BOOL),
    'bool("T")': (_b(True), R_BOOL),
    'bool("True")': (_b(True), R_BOOL),
    'bool("f")': (_b(False), R_BOOL),
    'bool("False")': (_b(False), R_BOOL),
    "bool(true)": ("celpy", "bool(bool) identity: langdef L2025-2026"),
}


# ---------------------------------------------------------------------------
# Spec oracle for the generated cases.  Every generator below returns the
# expression text together with a Python function that evaluates it the way
# the cel-spec (plus the Gatehouse decisions listed in RULINGS below) says,
# so the "expected" outcome of a generated case does not come from either
# library.  Values: bool, int, Uint (uint), float (double), str, None (null),
# list, dict, CelType; errors are raised as CelError.  While evaluating, the
# oracle records which spec rules it used (env.notes); they become the case's
# "ruling" when a library disagrees with the expected outcome.
# ---------------------------------------------------------------------------

N_HETERO = "heterogeneous numeric comparison: langdef L1028-1056, L1617"
N_KINDS = "equality across kinds is false: langdef L1034-1037"
N_ABSORB = "error absorbed by the deciding operand of &&/||: langdef L662-665"
N_LOGIC = "logical operands must be bool: langdef L1354, L1371"
N_SIZE = "size counts code points: langdef L1840-1841; string.textproto:31"
N_MAP3 = "3-argument map: langdef L706"
N_HAS = "has() on a non-map is an error: langdef L760"
N_OVERLOAD = "no matching overload: langdef L229-233"
N_CONV = "no such conversion overload: langdef L2019-2215"
N_STRDOUBLE = "string(double): Gatehouse shortest round-trip format"
N_STRBOOL = "string(bool): langdef L2146-2147"
N_BOOLCONV = "bool(): langdef L2025-2026 (Go ParseBool)"
N_ARITH = "no mixed-type arithmetic: langdef L229-233"
N_UINT = "uint(double) rejects negatives: Gatehouse (cel-go overflow.go:313)"
N_INTSTR = "int(string) is Go ParseInt base 10: Gatehouse (cel-go string.go:103)"


class CelError(Exception):
    pass


class Uint(int):
    pass


class CelType(object):
    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, CelType) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


class Env(object):
    def __init__(self, claims, request):
        self.claims = claims
        self.request = request
        self.notes = []

    def note(self, n):
        if n not in self.notes:
            self.notes.append(n)


def kind(v):
    if v is None:
        return "null_type"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, Uint):
        return "uint"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bytes):
        return "bytes"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "map"
    if isinstance(v, CelType):
        return "type"
    raise ValueError("oracle: unexpected value %r" % (v,))


NUMERIC = ("int", "uint", "double")


def o_eq(env, a, b):
    ka, kb = kind(a), kind(b)
    if ka in NUMERIC and kb in NUMERIC:
        if ka != kb:
            env.note(N_HETERO)
        return a == b  # Python compares int and float exactly; NaN != NaN
    if ka != kb:
        env.note(N_KINDS)
        return False
    if ka == "list":
        return len(a) == len(b) and all(o_eq(env, x, y) for x, y in zip(a, b))
    if ka == "map":
        raise ValueError("oracle: map equality not needed")
    return a == b


def o_less(env, a, b):
    ka, kb = kind(a), kind(b)
    if ka in NUMERIC and kb in NUMERIC:
        if ka != kb:
            env.note(N_HETERO)
        return a < b
    if ka == kb and ka in ("string", "bool", "bytes"):
        return a < b
    env.note(N_OVERLOAD)
    raise CelError("no such overload: _<_ on (%s, %s)" % (ka, kb))


def o_cmp(env, op, a, b):
    if op == "==":
        return o_eq(env, a, b)
    if op == "!=":
        return not o_eq(env, a, b)
    if op == "<":
        return o_less(env, a, b)
    if op == ">":
        return o_less(env, b, a)
    if op == "<=":
        # !(b < a) is wrong for NaN; no NaN reaches the generated cases
        return o_less(env, a, b) or o_eq(env, a, b)
    if op == ">=":
        return o_less(env, b, a) or o_eq(env, a, b)
    raise ValueError(op)


def o_select(env, m, field):
    if not isinstance(m, dict):
        env.note(N_OVERLOAD)
        raise CelError("no such overload: select .%s on %s" % (field, kind(m)))
    if field not in m:
        raise CelError("no such key: %s" % field)
    return m[field]


def o_index_map(env, m, key):
    if not isinstance(m, dict):
        raise CelError("no such overload: index on %s" % kind(m))
    if key not in m:
        raise CelError("no such key: %s" % key)
    return m[key]


def o_has(env, m, field):
    if not isinstance(m, dict):
        env.note(N_HAS)
        raise CelError("has() on %s" % kind(m))
    return field in m


def o_size(env, v):
    k = kind(v)
    if k == "string":
        if any(ord(c) > 127 for c in v):
            env.note(N_SIZE)
        return len(v)
    if k in ("list", "map", "bytes"):
        return len(v)
    env.note(N_OVERLOAD)
    raise CelError("no such overload: size(%s)" % k)


def o_list(env, v):
    if not isinstance(v, list):
        env.note(N_OVERLOAD)
        raise CelError("no such overload: macro on %s" % kind(v))
    return v


def o_bool(env, v):
    if not isinstance(v, bool):
        env.note(N_LOGIC)
        raise CelError("no such overload: expected bool, got %s" % kind(v))
    return v


def o_str_method(env, name, recv, arg):
    if not isinstance(recv, str) or not isinstance(arg, str):
        env.note(N_OVERLOAD)
        raise CelError("no such overload: %s on (%s, %s)" % (name, kind(recv), kind(arg)))
    if name == "startsWith":
        return recv.startswith(arg)
    if name == "endsWith":
        return recv.endswith(arg)
    if name == "contains":
        return arg in recv
    if name == "matches":
        import re

        # The generated patterns are RE2-compatible and mean the same in
        # Python's re (no \n in the data, no backreferences or lookarounds).
        return re.search(arg, recv) is not None
    raise ValueError(name)


def o_try(env, fn):
    """(value, None) or (None, CelError)."""
    try:
        return fn(env), None
    except CelError as e:
        return None, e


def o_and(env, fa, fb):
    a, ea = o_try(env, fa)
    b, eb = o_try(env, fb)
    if a is False or b is False:
        if ea is not None or eb is not None or not isinstance(a, bool) or not isinstance(b, bool):
            env.note(N_ABSORB)
        return False
    for v, e in ((a, ea), (b, eb)):
        if e is not None:
            raise e
        o_bool(env, v)
    return True


def o_or(env, fa, fb):
    a, ea = o_try(env, fa)
    b, eb = o_try(env, fb)
    if a is True or b is True:
        if ea is not None or eb is not None or not isinstance(a, bool) or not isinstance(b, bool):
            env.note(N_ABSORB)
        return True
    for v, e in ((a, ea), (b, eb)):
        if e is not None:
            raise e
        o_bool(env, v)
    return False


def o_exists(env, items, pred):
    err = None
    for g in o_list(env, items):
        v, e = o_try(env, lambda env: o_bool(env, pred(env, g)))
        if v is True:
            if err is not None:
                env.note(N_ABSORB)
            return True
        err = err or e
    if err is not None:
        raise err
    return False


def o_all(env, items, pred):
    err = None
    for g in o_list(env, items):
        v, e = o_try(env, lambda env: o_bool(env, pred(env, g)))
        if v is False:
            if err is not None:
                env.note(N_ABSORB)
            return False
        err = err or e
    if err is not None:
        raise err
    return True


def o_exists_one(env, items, pred):
    return sum(1 for g in o_list(env, items) if o_bool(env, pred(env, g))) == 1


def o_filter(env, items, pred):
    return [g for g in o_list(env, items) if o_bool(env, pred(env, g))]


def o_add(env, a, b):
    ka, kb = kind(a), kind(b)
    if ka == kb == "string":
        return a + b
    return o_arith(env, "+", a, b)


INT64_MIN, INT64_MAX, UINT64_MAX = -(2 ** 63), 2 ** 63 - 1, 2 ** 64 - 1


def o_arith(env, op, a, b):
    ka, kb = kind(a), kind(b)
    if ka != kb or ka not in NUMERIC:
        env.note(N_ARITH)
        raise CelError("no such overload: _%s_ on (%s, %s)" % (op, ka, kb))
    if ka == "double":
        if op == "%":
            env.note(N_OVERLOAD)
            raise CelError("no such overload: _%_ on (double, double)")
        if op == "/":
            if b == 0.0:
                raise ValueError("oracle: double division by zero not needed")
            return a / b
        return {"+": a + b, "-": a - b, "*": a * b}[op]
    if op in ("/", "%") and b == 0:
        raise CelError("division by zero")
    if op == "/":
        r = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
    elif op == "%":
        r = abs(a) % abs(b) * (1 if a >= 0 else -1)
    else:
        r = {"+": a + b, "-": a - b, "*": a * b}[op]
    lo, hi = (0, UINT64_MAX) if ka == "uint" else (INT64_MIN, INT64_MAX)
    if not lo <= r <= hi:
        raise CelError("overflow")
    return Uint(r) if ka == "uint" else r


def format_double(x):
    """Gatehouse's string(double): shortest round-trip digits, exponent form
    when the decimal exponent is < -4 or >= 21 (sign and >= 2 digits)."""
    from decimal import Decimal

    if math.isnan(x) or math.isinf(x):
        raise ValueError("oracle: string() of NaN/Infinity not needed")
    if x == 0.0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    sign, digits, exp = Decimal(repr(x)).as_tuple()
    ds = "".join(map(str, digits)).rstrip("0")
    exp += len("".join(map(str, digits))) - len(ds)
    point = len(ds) + exp  # value = 0.ds * 10**point
    x10 = point - 1  # decimal exponent: d.ddd * 10**x10
    neg = "-" if sign else ""
    if x10 < -4 or x10 >= 21:
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return "%s%se%s%02d" % (neg, mant, "-" if x10 < 0 else "+", abs(x10))
    if point <= 0:
        return neg + "0." + "0" * (-point) + ds
    if point >= len(ds):
        return neg + ds + "0" * (point - len(ds))
    return neg + ds[:point] + "." + ds[point:]


def o_convert(env, fn, v):
    k = kind(v)
    if fn == "string":
        if k == "string":
            return v
        if k == "bool":
            env.note(N_STRBOOL)
            return "true" if v else "false"
        if k in ("int", "uint"):
            return str(int(v))
        if k == "double":
            env.note(N_STRDOUBLE)
            return format_double(v)
    elif fn == "int":
        if k == "int":
            return v
        if k == "uint":
            if v > INT64_MAX:
                raise CelError("overflow")
            return int(v)
        if k == "double":
            if not (float(INT64_MIN) < v < float(INT64_MAX)):
                raise CelError("overflow")
            return int(v)  # truncates toward zero
        if k == "string":
            import re

            if not re.fullmatch(r"[+-]?[0-9]+", v) or not INT64_MIN <= int(v) <= INT64_MAX:
                raise CelError("int() cannot parse %r" % v)
            return int(v)
    elif fn == "uint":
        if k == "uint":
            return v
        if k == "int":
            if v < 0:
                raise CelError("overflow")
            return Uint(v)
        if k == "double":
            if v < 0:
                env.note(N_UINT)
                raise CelError("overflow")
            if not v < float(UINT64_MAX):
                raise CelError("overflow")
            return Uint(int(v))
        if k == "string":
            import re

            if not re.fullmatch(r"[0-9]+", v) or int(v) > UINT64_MAX:
                raise CelError("uint() cannot parse %r" % v)
            return Uint(int(v))
    elif fn == "double":
        if k == "double":
            return v
        if k in ("int", "uint"):
            return float(v)
        if k == "string":
            import re

            if re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", v):
                return float(v)
            if re.fullmatch(r"(?i)[+-]?(inf|infinity|nan)", v):
                return float(v.lower().replace("infinity", "inf"))
            raise CelError("double() cannot parse %r" % v)
    elif fn == "bool":
        if k == "bool":
            return v
        if k == "string":
            env.note(N_BOOLCONV)
            if v in ("1", "t", "T", "TRUE", "true", "True"):
                return True
            if v in ("0", "f", "F", "FALSE", "false", "False"):
                return False
            raise CelError("bool() cannot parse %r" % v)
    elif fn == "bytes":
        if k == "bytes":
            return v
        if k == "string":
            return v.encode("utf-8")
    env.note(N_CONV)
    raise CelError("no such overload: %s(%s)" % (fn, k))


def num_literal(text):
    if text.endswith("u"):
        return Uint(int(text[:-1]))
    if "." in text or "e" in text:
        return float(text)
    return int(text)


def oracle_encode(v):
    k = kind(v)
    if k == "null_type":
        return {"null": None}
    if k == "bool":
        return {"bool": v}
    if k in ("int", "uint"):
        return {k: str(int(v))}
    if k == "double":
        return _encode_double(v)
    if k == "string":
        return {"string": v}
    if k == "bytes":
        return {"bytes": base64.b64encode(v).decode("ascii")}
    if k == "list":
        return {"list": [oracle_encode(x) for x in v]}
    if k == "map":
        return _encode_map([(oracle_encode(a), oracle_encode(b)) for a, b in v.items()])
    return {"type": v.name}


def oracle_outcome(fn, claims, request):
    env = Env(claims, request)
    try:
        return {"value": oracle_encode(fn(env))}, env.notes
    except CelError as e:
        return {"error": str(e)}, env.notes


# ---------------------------------------------------------------------------
# (b) generated cases: a small random grammar of route rules.  Each generator
# returns (text, oracle function).  The random draws are made in the same
# order as in the text-only generator of earlier revisions, so the cases are
# unchanged.
# ---------------------------------------------------------------------------

STR_POOL = ["acme", "globex", "admin", "adm", "dev", "ops", "ünïcode", "café", "", "g1"]
NUM_POOL = ["0", "3", "3.0", "1.5", "-7", "10", "2u", "-7.0", "1e1"]
CMP = ["==", "!=", "<", "<=", ">", ">="]
METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE"]
HEADERS = ["x-org", "x-request-id", "x-count", "authorization", "x-missing", "content-type"]
REGEXES = ["^adm", "^g[0-9]$", "(dev|ops)", "^[a-z]+$", "é", "^.{3}$", "(?i)ADMIN"]
PATH_REGEXES = ["^/api/", "^/api/v[0-9]+/", "items/[0-9]+$", "^/$", "admin"]
FIELDS = ["sub", "tenant", "org", "groups", "level", "score", "ratio", "n", "active", "name", "scope", "profile", "roles", "missing"]


def q(s):
    return json.dumps(s, ensure_ascii=False)


def c_(env, f):
    return o_select(env, env.claims, f)


def hdr(env, h):
    return o_index_map(env, o_select(env, env.request, "headers"), h)


def gen_atom(r):
    k = r.randrange(20)
    if k == 0:
        s = r.choice(STR_POOL)
        return "claims.tenant == %s" % q(s), lambda env: o_eq(env, c_(env, "tenant"), s)
    if k == 1:
        m = r.choice(["startsWith", "endsWith", "contains"])
        s = r.choice(STR_POOL)
        return "claims.groups.exists(g, g.%s(%s))" % (m, q(s)), lambda env: o_exists(
            env, c_(env, "groups"), lambda env, g: o_str_method(env, m, g, s)
        )
    if k == 2:
        macro = r.choice(["all", "exists", "exists_one"])
        s0 = r.choice(STR_POOL)
        rx = r.choice(REGEXES)
        op = r.choice(CMP)
        n = r.randrange(5)
        s1 = r.choice(STR_POOL)
        s2 = r.choice(STR_POOL)
        text, pred = r.choice(
            [
                ("g == %s" % q(s0), lambda env, g: o_eq(env, g, s0)),
                ("g.matches(%s)" % q(rx), lambda env, g: o_str_method(env, "matches", g, rx)),
                ("size(g) %s %d" % (op, n), lambda env, g: o_cmp(env, op, o_size(env, g), n)),
                ("g in [%s, %s]" % (q(s1), q(s2)), lambda env, g: o_eq(env, g, s1) or o_eq(env, g, s2)),
            ]
        )
        impl = {"all": o_all, "exists": o_exists, "exists_one": o_exists_one}[macro]
        return "claims.groups.%s(g, %s)" % (macro, text), lambda env: impl(env, c_(env, "groups"), pred)
    if k == 3:
        f = r.choice(["level", "score", "ratio"])
        op = r.choice(CMP)
        num = r.choice(NUM_POOL)
        return "claims.%s %s %s" % (f, op, num), lambda env: o_cmp(env, op, c_(env, f), num_literal(num))
    if k == 4:
        op = r.choice(CMP)
        n = r.choice([0, 1, 2, 3, 10])
        return "size(claims.groups) %s %d" % (op, n), lambda env: o_cmp(env, op, o_size(env, c_(env, "groups")), n)
    if k == 5:
        ms = r.sample(METHODS, r.randrange(1, 4))
        return "request.method in [%s]" % ", ".join(q(m) for m in ms), lambda env: any(
            o_eq(env, o_select(env, env.request, "method"), m) for m in ms
        )
    if k == 6:
        f = r.choice(["org", "tenant"])
        return 'request.headers["x-org"] == claims.%s' % f, lambda env: o_eq(env, hdr(env, "x-org"), c_(env, f))
    if k == 7:
        h = r.choice(HEADERS)
        return "%s in request.headers" % q(h), lambda env: h in o_select(env, env.request, "headers")
    if k == 8:
        f = r.choice(FIELDS)
        return "has(claims.%s)" % f, lambda env: o_has(env, env.claims, f)
    if k == 9:
        text = r.choice(["claims.active", "claims.active == true", "!claims.active", "claims.active != false"])
        fn = {
            "claims.active": lambda env: c_(env, "active"),
            "claims.active == true": lambda env: o_eq(env, c_(env, "active"), True),
            "!claims.active": lambda env: not o_bool(env, c_(env, "active")),
            "claims.active != false": lambda env: not o_eq(env, c_(env, "active"), False),
        }[text]
        return text, fn
    if k == 10:
        prx = r.choice(PATH_REGEXES)
        m, arg = r.choice([("startsWith", "/api"), ("endsWith", "/9"), ("matches", prx), ("contains", "admin")])
        return "request.path.%s(%s)" % (m, q(arg)), lambda env: o_str_method(env, m, o_select(env, env.request, "path"), arg)
    if k == 11:
        op = r.choice(CMP)
        n = r.randrange(12)
        return "claims.name.size() %s %d" % (op, n), lambda env: o_cmp(env, op, o_size(env, c_(env, "name")), n)
    if k == 12:
        f = r.choice(["level", "score", "ratio", "n", "groups", "name"])
        t = r.choice(["int", "double", "string", "list", "null_type", "uint"])
        return "type(claims.%s) == %s" % (f, t), lambda env: CelType(kind(c_(env, f))) == CelType(t)
    if k == 13:
        op = r.choice(CMP)
        num = r.choice(["7", "7.0", "7u", "0"])
        return "claims.profile.manager.id %s %s" % (op, num), lambda env: o_cmp(
            env, op, o_select(env, o_select(env, c_(env, "profile"), "manager"), "id"), num_literal(num)
        )
    if k == 14:
        s = r.choice(["a", "g", "d"])
        op = r.choice(CMP)
        n = r.randrange(3)
        return "claims.groups.filter(g, g.startsWith(%s)).size() %s %d" % (q(s), op, n), lambda env: o_cmp(
            env, op, o_size(env, o_filter(env, c_(env, "groups"), lambda env, g: o_str_method(env, "startsWith", g, s))), n
        )
    if k == 15:
        s = r.choice(STR_POOL)
        return "%s in claims.groups" % q(s), lambda env: any(o_eq(env, s, g) for g in o_list(env, c_(env, "groups")))
    if k == 16:
        text = r.choice(["claims.n == null", "claims.missing == null", "claims.level == null", "has(claims.profile.manager)"])
        if text.startswith("has("):
            return text, lambda env: o_has(env, c_(env, "profile"), "manager")
        f = text.split(".")[1].split(" ")[0]
        return text, lambda env: o_eq(env, c_(env, f), None)
    if k == 17:
        op = r.choice(CMP)
        return 'int(request.headers["x-count"]) %s claims.level' % op, lambda env: o_cmp(
            env, op, o_convert(env, "int", hdr(env, "x-count")), c_(env, "level")
        )
    if k == 18:
        s = r.choice([".example.com", "api.example.com", ".org"])
        return "request.host.endsWith(%s)" % q(s), lambda env: o_str_method(env, "endsWith", o_select(env, env.request, "host"), s)
    s = r.choice(["read", "write", "admin"])
    return "claims.scope.contains(%s)" % q(s), lambda env: o_str_method(env, "contains", c_(env, "scope"), s)


def seq_fn(seq):
    """The oracle function of an operator sequence [f, "&&", f, "||", f, ...]
    as CEL parses it (&& binds tighter than ||).  The generator does not
    parenthesize && / || operands, so "A || B" generated as the left operand
    of "&& C" reads A || (B && C); the oracle must follow the text."""

    def fold(fs, combine):
        f = fs[0]
        for g in fs[1:]:
            f = (lambda f, g: lambda env: combine(env, f, g))(f, g)
        return f

    groups = [[]]
    for x in seq:
        if x == "||":
            groups.append([])
        elif x != "&&":
            groups[-1].append(x)
    return fold([fold(g, o_and) for g in groups], o_or)


def gen_bool(r, depth):
    """Returns (text, seq): seq is the operator sequence of the text's top
    level (units are oracle functions), see seq_fn."""
    if depth <= 0 or r.random() < 0.35:
        text, fn = gen_atom(r)
        return text, [fn]
    k = r.randrange(10)
    if k < 8:
        op = "&&" if k < 4 else "||"
        (ta, sa), (tb, sb) = gen_bool(r, depth - 1), gen_bool(r, depth - 1)
        return "%s %s %s" % (ta, op, tb), sa + [op] + sb
    if k == 8:
        ta, sa = gen_bool(r, depth - 1)
        fa = seq_fn(sa)
        return "!(%s)" % ta, [lambda env: not o_bool(env, fa(env))]
    (tc, sc), (ta, sa), (tb, sb) = gen_bool(r, depth - 1), gen_bool(r, depth - 1), gen_bool(r, depth - 1)
    fc, fa, fb = seq_fn(sc), seq_fn(sa), seq_fn(sb)
    return "(%s ? %s : %s)" % (tc, ta, tb), [lambda env: fa(env) if o_bool(env, fc(env)) else fb(env)]


def gen_paren_bool(r, depth):
    e, seq = gen_bool(r, depth)
    return ("(%s)" % e if r.random() < 0.3 else e), seq_fn(seq)


def gen_value(r):
    k = r.randrange(14)
    if k == 0:
        h = r.choice(HEADERS)
        return "request.headers[%s]" % q(h), lambda env: hdr(env, h)
    if k == 1:
        s = r.choice(["-x", "", "é"])
        return "claims.groups.map(g, g + %s)" % q(s), lambda env: [o_add(env, g, s) for g in o_list(env, c_(env, "groups"))]
    if k == 2:
        m = r.choice(["startsWith", "contains", "matches"])
        s = r.choice(["a", "g", "^d", "o"])
        return "claims.groups.filter(g, g.%s(%s))" % (m, q(s)), lambda env: o_filter(
            env, c_(env, "groups"), lambda env, g: o_str_method(env, m, g, s)
        )
    if k == 3:
        f = r.choice(["groups", "name", "profile", "tenant"])
        return "size(claims.%s)" % f, lambda env: o_size(env, c_(env, f))
    if k == 4:
        f = r.choice(["level", "score"])
        op = r.choice(["+", "-", "*", "/", "%"])
        num = r.choice(["1", "2", "0", "1.0", "2u"])
        return "claims.%s %s %s" % (f, op, num), lambda env: o_arith(env, op, c_(env, f), num_literal(num))
    if k == 5:
        return "[request.method, request.host, request.path]", lambda env: [
            o_select(env, env.request, f) for f in ("method", "host", "path")
        ]
    if k == 6:
        i = r.choice([0, 1, 2, 9, 10])

        def index(env):
            groups = o_list(env, c_(env, "groups"))
            if not 0 <= i < len(groups):
                raise CelError("index out of range: %d" % i)
            return groups[i]

        return "claims.groups[%d]" % i, index
    if k == 7:
        return '{"m": request.method, "n": size(claims.groups), "a": claims.active}', lambda env: {
            "m": o_select(env, env.request, "method"),
            "n": o_size(env, c_(env, "groups")),
            "a": c_(env, "active"),
        }
    if k == 8:
        fn = r.choice(["string", "int", "uint", "double", "bool", "bytes"])
        f = r.choice(["level", "score", "name", "active", "sub"])
        return "%s(claims.%s)" % (fn, f), lambda env: o_convert(env, fn, c_(env, f))
    if k == 9:
        f = r.choice(FIELDS)
        return "type(claims.%s)" % f, lambda env: CelType(kind(c_(env, f)))
    if k == 10:
        t = r.choice(["0", "2", "2.5"])
        e = r.choice(['"lo"', "0", "null"])
        other = {'"lo"': "lo", "0": 0, "null": None}[e]
        return "claims.level > %s ? %s : %s" % (t, q("hi"), e), lambda env: "hi" if o_bool(
            env, o_cmp(env, ">", c_(env, "level"), num_literal(t))
        ) else other
    if k == 11:
        f = r.choice(FIELDS)
        return "claims.%s" % f, lambda env: c_(env, f)
    if k == 12:
        h = r.choice(HEADERS)
        return "[claims.sub, request.headers[%s], size(claims.groups)]" % q(h), lambda env: [
            c_(env, "sub"),
            hdr(env, h),
            o_size(env, c_(env, "groups")),
        ]

    def map3(env):
        env.note(N_MAP3)
        return [g for g in o_list(env, c_(env, "groups")) if o_bool(env, o_cmp(env, ">", o_size(env, g), 2))]

    return "claims.groups.map(g, size(g) > 2, g)", map3


def generated_cases(r, n_bool, n_value):
    names = list(CLAIM_SETS)
    out = []
    for i in range(n_bool + n_value):
        expr, fn = gen_paren_bool(r, r.choice([1, 1, 2, 2, 3])) if i < n_bool else gen_value(r)
        out.append((expr, fn, r.choice(names), r.randrange(len(REQUESTS))))
    return out


def build_cases():
    r = random.Random(SEED)
    specs = []
    for item in HAND:
        if isinstance(item, tuple):
            specs.append(("hand",) + item + (None,))
        else:
            specs.append(("hand", item, "admin", 0, None))
    for expr, fn, cname, ri in generated_cases(r, 230, 70):
        specs.append(("generated", expr, cname, ri, fn))
    cases = []
    for kind_, expr, cname, ri, fn in specs:
        cases.append(
            (
                {
                    "kind": kind_,
                    "expression": expr,
                    "claims_set": cname,
                    "claims": CLAIM_SETS[cname],
                    "request": REQUESTS[ri],
                },
                fn,
            )
        )
    return cases


def same(a, b):
    if "error" in a and "error" in b:
        return True
    return a.get("value") == b.get("value") and "error" not in a and "error" not in b


def rule(case, fn):
    """Sets case["expected"] and case["ruling"] (or leaves both out when the
    case cannot be ruled, which --check reports)."""
    cel, celpy = case["cel"], case["celpy"]
    if fn is not None:
        expected, notes = oracle_outcome(fn, case["claims"], case["request"])
        ruling = "; ".join(notes) or "spec semantics (see the oracle)"
    elif case["expression"] in RULINGS:
        expected, ruling = RULINGS[case["expression"]]
        if expected in ("cel", "celpy"):
            expected = case[expected]
    elif case["agree"]:
        expected, ruling = cel, "agree"
    else:
        return
    if same(expected, cel) and same(expected, celpy):
        ruling = "agree"
    case["expected"] = expected
    case["ruling"] = ruling


def main(check=False):
    cases = build_cases()
    workers = {"cel": Worker("cel"), "celpy": Worker("celpy")}
    for w in workers.values():
        w.start()
    results = []
    for case, fn in cases:
        for w in workers.values():
            w.send(case)
        deadline = time.monotonic() + CASE_TIMEOUT_SECONDS
        outcomes = {name: w.receive(deadline) for name, w in workers.items()}
        hung = [n for n, o in outcomes.items() if o.get("error", "").startswith("harness:")]
        if hung:
            # A library hanging or killing its interpreter: the case is left
            # out of the output; remove it from the generator.
            print("DROPPED (%s) %r: %s" % (hung, case["expression"], [outcomes[n] for n in hung]), file=sys.stderr)
            continue
        bad = [n for n, o in outcomes.items() if o.get("probe_failed")]
        if bad:
            print("warning: cel type probe failed on %r: %s" % (case["expression"], outcomes["cel"]), file=sys.stderr)
        for o in outcomes.values():
            o.pop("probe_failed", None)
        case = dict(case)
        case["cel"] = outcomes["cel"]
        case["celpy"] = outcomes["celpy"]
        case["agree"] = same(outcomes["cel"], outcomes["celpy"])
        rule(case, fn)
        results.append(case)
    for w in workers.values():
        w.close()
    if not check:
        json.dump({"cases": results}, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
    n_dis = sum(1 for c in results if not c["agree"])
    print("%d cases, %d agree, %d disagree" % (len(results), len(results) - n_dis, n_dis), file=sys.stderr)
    ruled = [c for c in results if "expected" in c]
    not_cel = sum(1 for c in ruled if not same(c["expected"], c["cel"]))
    not_celpy = sum(1 for c in ruled if not same(c["expected"], c["celpy"]))
    not_both = sum(1 for c in ruled if not same(c["expected"], c["cel"]) and not same(c["expected"], c["celpy"]))
    print(
        "self-check: %d with expected (%d ruled agree); expected != cel: %d, != celpy: %d, != both: %d"
        % (len(ruled), sum(1 for c in ruled if c["ruling"] == "agree"), not_cel, not_celpy, not_both),
        file=sys.stderr,
    )
    missing = [c for c in results if "expected" not in c]
    for c in missing:
        print("NO EXPECTED: [%s] %r" % (c["claims_set"], c["expression"]), file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2])
    elif sys.argv[1:] == ["--check"]:
        sys.exit(main(check=True))
    elif len(sys.argv) == 1:
        sys.exit(main())
    else:
        sys.exit("usage: differential.py [--check]")
