#!/usr/bin/env python3
"""Turns bench/run.sh's raw results into one table and the target checks, as Markdown.

Usage: summarize.py RESULTS.tsv SUMMARY.md
RESULTS.tsv has one "contender<TAB>scenario<TAB>key<TAB>value" line per number (contender "meta"
for the run's settings and versions). Prints the summary and writes the same text to SUMMARY.md.
"""
import collections, sys

results_path, summary_path = sys.argv[1], sys.argv[2]
data = collections.defaultdict(dict)   # (contender, scenario) -> {key: value}
series = collections.defaultdict(lambda: collections.defaultdict(list))   # (contender, scenario) -> {key: [value per round]}
meta = {}
invalid = collections.defaultdict(list)
with open(results_path) as f:
    for line in f:
        contender, scenario, key, value = line.rstrip("\n").split("\t", 3)
        if contender == "meta":
            meta[key] = value
        elif key == "invalid":
            invalid[(contender, scenario)].append(value)
        else:
            data[(contender, scenario)][key] = value
            series[(contender, scenario)][key].append(value)

CONTENDERS = ["direct", "nginx", "openidc", "haproxy-jwt", "envoy-jwt", "gatehouse"]
LABEL = {"direct": "direct (no proxy: ceiling)", "nginx": "nginx proxy, no auth",
         "openidc": "Apache + mod_auth_openidc", "haproxy-jwt": "HAProxy jwt_verify, no cache",
         "envoy-jwt": "Envoy jwt_authn, token cache", "gatehouse": "gatehouse"}
SCENARIO = {"a": "a: one valid token", "b": "b: new valid token per request",
            "c": "c: invalid tokens (401)", "d": "d: 100 MiB uploads", "f": "f: DPoP, new proof per request",
            "a-opaque": "a, with an introspection provider configured", "g": "g: opaque token (introspection cache hit)",
            "h": "h: g during a 5k/s random-token flood", "h-saturating": "h: g during a saturating random-token flood",
            "a-plain": "a, fresh process (beside a-assertion)", "a-assertion": "a, with [assertion] (ES256)",
            "b-plain": "b, fresh process (beside b-assertion)", "b-assertion": "b, with [assertion] (ES256)",
            "a-traceoff": "a, [tracing] off (beside a-trace0, a-trace1)",
            "a-trace0": "a, with [tracing], sampling_ratio 0", "a-trace1": "a, with [tracing], every request sampled"}

def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2

def values(contender, scenario, key):
    """Every round's value of a number (ROUNDS=N records it N times, in round order)."""
    try:
        return [float(v) for v in series.get((contender, scenario), {}).get(key, [])]
    except ValueError:
        return []

def num(contender, scenario, key):
    """A number, or the median of its rounds."""
    xs = values(contender, scenario, key)
    return median(xs) if xs else None

def round_ratios_of(a, b, scenario, key="rps"):
    """Paired per-round ratios a / b, when both ran the same rounds."""
    xs, ys = values(a, scenario, key), values(b, scenario, key)
    return [x / y for x, y in zip(xs, ys) if y] if len(xs) == len(ys) > 1 else []

def fmt_int(x):
    return f"{x:,.0f}".replace(",", " ")

def fmt_ms(x):
    return "" if x is None else (f"{x:.2f} ms" if x < 10 else f"{x:.1f} ms" if x < 100 else f"{x:.0f} ms")

def fmt_mib(kib):
    return f"{kib / 1024:.1f} MiB"

def have(*xs):
    return all(x is not None for x in xs)

def ratio(x, base):
    return f"{x / base:.2f}x" if x is not None and base else ""

rows = []   # scenario, contender, result, p50, p99, vs nginx, notes

for sc in "abc":
    base = num("nginx", sc, "rps")
    for c in CONTENDERS:
        rps = num(c, sc, "rps")
        if rps is None:
            continue
        label = LABEL[c]
        notes = []
        if sc == "c" and c == "direct":
            label += ", 200s"
        elif sc == "c" and c == "nginx":
            label += ": plain forward, 200s (n/a as a 401 path)"
        elif sc == "c":
            notes.append("all non-2xx (401)" if num(c, sc, "non2xx") == num(c, sc, "requests") else "")
        hits, misses = num(c, sc, "cache_hits"), num(c, sc, "cache_misses")
        if have(hits, misses) and hits + misses > 0:
            notes.append(f"verified-token cache: {100 * hits / (hits + misses):.1f}% hits")
        errors = data[(c, sc)].get("socket_errors")
        if errors and any(part.split()[-1] != "0" for part in errors.split(",")):
            notes.append(f"socket errors: {errors}")
        rounds = len(values(c, sc, "rps"))
        if rounds > 1:
            notes.append(f"median of {rounds} alternating rounds")
        notes += [f"INVALID: {m}" for m in invalid[(c, sc)]]
        rows.append([SCENARIO[sc], label, f"{fmt_int(rps)} req/s", fmt_ms(num(c, sc, "p50_ms")),
                     fmt_ms(num(c, sc, "p99_ms")), ratio(rps, base), "; ".join(n for n in notes if n)])

# Scenario f (gatehouse only): DPoP beside gatehouse's own bearer row (a); "vs nginx" is to nginx's (a).
fr, fa = num("gatehouse", "f", "rps"), num("gatehouse", "a", "rps")
if fr is not None:
    notes = [f"{fr / fa:.2f}x gatehouse's bearer (a)" if fa else "", "vs nginx: its plain forward (a)"]
    notes += [f"INVALID: {m}" for m in invalid[("gatehouse", "f")]]
    rows.append([SCENARIO["f"], LABEL["gatehouse"], f"{fmt_int(fr)} req/s", fmt_ms(num("gatehouse", "f", "p50_ms")),
                 fmt_ms(num("gatehouse", "f", "p99_ms")), ratio(fr, num("nginx", "a", "rps")), "; ".join(n for n in notes if n)])

# Scenario g (gatehouse only): the opaque token's cache-hit path against the JWT path of the same process.
for sc in ("a-opaque", "g", "h", "h-saturating"):
    r = num("gatehouse", sc, "rps")
    if r is None:
        continue
    ja = num("gatehouse", "a-opaque", "rps")
    notes = [f"{r / ja:.2f}x the JWT path (a) of the same configuration" if sc == "g" and ja else ""]
    if sc.startswith("h"):
        d = data[("gatehouse", sc)]
        notes.append(f"beside {d.get('flood_rps', '?')} req/s of random tokens: {d.get('introspection_calls', '?')} introspection calls, "
                     f"{d.get('introspection_busy', '?')} answered 503 introspection_busy")
    notes += [f"INVALID: {m}" for m in invalid[("gatehouse", sc)]]
    rows.append([SCENARIO[sc], LABEL["gatehouse"], f"{fmt_int(r)} req/s", fmt_ms(num("gatehouse", sc, "p50_ms")),
                 fmt_ms(num("gatehouse", sc, "p99_ms")), ratio(r, num("nginx", "a", "rps")), "; ".join(n for n in notes if n)])

# [assertion]: the identity assertion's cost, against the same scenario in a fresh process just before.
for sc in ("a-plain", "a-assertion", "b-plain", "b-assertion"):
    r = num("gatehouse", sc, "rps")
    if r is None:
        continue
    plain = num("gatehouse", sc.replace("assertion", "plain"), "rps")
    notes = []
    if sc.endswith("assertion") and plain:
        d = data[("gatehouse", sc)]
        notes.append(f"{r / plain:.2f}x {sc.replace('assertion', 'plain')}; {d.get('signatures', '?')} assertions signed, "
                     f"{d.get('cache_misses', '?')} verifications")
    notes += [f"INVALID: {m}" for m in invalid[("gatehouse", sc)]]
    rows.append([SCENARIO[sc], LABEL["gatehouse"], f"{fmt_int(r)} req/s", fmt_ms(num("gatehouse", sc, "p50_ms")),
                 fmt_ms(num("gatehouse", sc, "p99_ms")), ratio(r, num("nginx", sc[0], "rps")), "; ".join(n for n in notes if n)])

# [tracing]: against a-traceoff (tracing off), in alternating rounds; the last round's figures, the median ratio.
def round_ratios(sc):
    d = data.get(("gatehouse", sc), {})
    return sorted(float(v) for k, v in d.items() if k.startswith("ratio_r"))

for sc in ("a-traceoff", "a-trace0", "a-trace1"):
    r = num("gatehouse", sc, "rps")
    if r is None:
        continue
    d = data[("gatehouse", sc)]
    ratios = round_ratios(sc)
    notes = []
    if ratios:
        notes.append(f"median {median(ratios):.2f}x a-traceoff over {len(ratios)} rounds ({', '.join(f'{x:.2f}' for x in ratios)})")
    if sc != "a-traceoff":
        notes.append(f"last round {d.get('spans_exported', '?')} spans exported, {d.get('spans_dropped', '?')} dropped")
    notes += [f"INVALID: {m}" for m in invalid[("gatehouse", sc)]]
    rows.append([SCENARIO[sc], LABEL["gatehouse"], f"{fmt_int(r)} req/s", fmt_ms(num("gatehouse", sc, "p50_ms")),
                 fmt_ms(num("gatehouse", sc, "p99_ms")), ratio(r, num("nginx", "a", "rps")), "; ".join(n for n in notes if n)])

base = num("nginx", "d", "mibs")
for c in CONTENDERS:
    mibs = num(c, "d", "mibs")
    if mibs is None:
        continue
    notes = [f"{data[(c, 'd')].get('uploads', '?')} uploads"]
    growth = num(c, "d", "rss_growth_kib")
    if growth is not None:
        notes.append(f"RSS growth {fmt_mib(growth)} (from {fmt_mib(num(c, 'd', 'rss_before_kib'))} "
                     f"to {fmt_mib(num(c, 'd', 'rss_peak_kib'))})")
    notes += [f"INVALID: {m}" for m in invalid[(c, "d")]]
    rows.append([SCENARIO["d"], LABEL[c], f"{mibs:,.1f} MiB/s".replace(",", " "), "", "",
                 ratio(mibs, base), "; ".join(notes)])

for key, what in [("rss_start_kib", "e: RSS idle, after start"),
                  ("rss_warm_kib", "e: RSS idle, after warm-up"),
                  ("rss_conns_kib", f"e: RSS, {meta.get('idle_connections', '?')} keep-alive conns")]:
    base = num("nginx", "e", key)
    for c in CONTENDERS:
        kib = num(c, "e", key)
        if kib is None:
            continue
        notes = []
        if key == "rss_conns_kib":
            notes.append(f"{data[(c, 'e')].get('conns', '?')} connections open, "
                         f"{data[(c, 'e')].get('rps', '?')} req/s")
            notes += [f"INVALID: {m}" for m in invalid[(c, "e")]]
        rows.append([what, LABEL[c], fmt_mib(kib), "", "", ratio(kib, base), "; ".join(notes)])

# --- targets (Gatehouse) --------------------------------------------------------------------------
targets = []

def target(text, ok, detail, *cells):
    """ok: True/False, or None when a number is missing; cells: (contender, scenario) that must be valid."""
    if ok is None:
        verdict = "n/a"
    elif any(invalid[cell] for cell in cells):
        verdict = "INVALID RUN"
    else:
        verdict = "met" if ok else "NOT MET"
    targets.append(f"- **{verdict}**: {text}: {detail}")

g, n, o = (num("gatehouse", "a", "rps"), num("nginx", "a", "rps"), num("openidc", "a", "rps"))
target("(a) gatehouse >= 0.6x nginx req/s", g >= 0.6 * n if have(g, n) else None,
       f"{g / n:.2f}x ({fmt_int(g)} vs {fmt_int(n)} req/s)" if have(g, n) else "missing",
       ("gatehouse", "a"), ("nginx", "a"))
target("(a) gatehouse >= 5x openidc req/s", g >= 5 * o if have(g, o) else None,
       f"{g / o:.2f}x ({fmt_int(g)} vs {fmt_int(o)} req/s)" if have(g, o) else "missing",
       ("gatehouse", "a"), ("openidc", "a"))
gp, np_ = num("gatehouse", "a", "p99_ms"), num("nginx", "a", "p99_ms")
target("(a) gatehouse p99 <= 2x nginx p99", gp <= 2 * np_ if have(gp, np_) else None,
       f"{gp / np_:.2f}x ({fmt_ms(gp)} vs {fmt_ms(np_)})" if have(gp, np_) else "missing",
       ("gatehouse", "a"), ("nginx", "a"))
gb, nb = num("gatehouse", "b", "rps"), num("nginx", "b", "rps")
hits, misses = num("gatehouse", "b", "cache_hits"), num("gatehouse", "b", "cache_misses")
hit_note = (f", {100 * hits / (hits + misses):.1f}% cache hits" if have(hits, misses) and hits + misses else "")
target("(b) gatehouse >= 0.45x nginx req/s (nginx forwarding the same token pool)",
       gb >= 0.45 * nb if have(gb, nb) else None,
       f"{gb / nb:.2f}x ({fmt_int(gb)} vs {fmt_int(nb)} req/s{hit_note})" if have(gb, nb) else "missing",
       ("gatehouse", "b"), ("nginx", "b"))
gc = num("gatehouse", "c", "rps")
target("(c) gatehouse 401 path at least as fast as (a)", gc >= g if have(gc, g) else None,
       f"{gc / g:.2f}x ({fmt_int(gc)} vs {fmt_int(g)} req/s)" if have(gc, g) else "missing",
       ("gatehouse", "c"), ("gatehouse", "a"))
# HAProxy verifies every request (no cache): (a) is Gatehouse's cache against a signature check per
# request, (b) both verify every request. Envoy's jwt_authn has a verified-token cache like Gatehouse's:
# (a) both hit their cache, (b) both miss it (the same token pool, 4x either cache).
for other in ("haproxy-jwt", "envoy-jwt"):
    # Issue 47's targets: (a) 2x both; (b) 1.0x HAProxy (no cache: it verifies every request too), 2x Envoy.
    for sc, times, what in [("a", 2.0, "one valid token"), ("b", 2.0 if other == "envoy-jwt" else 1.0, "new valid token per request")]:
        gs, hs = num("gatehouse", sc, "rps"), num(other, sc, "rps")
        paired = round_ratios_of("gatehouse", other, sc)
        rounds = f"; rounds {', '.join(f'{x:.2f}' for x in paired)}" if paired else ""
        target(f"({sc}) gatehouse / {other} >= {times:.1f}x req/s ({what})",
               gs >= times * hs if have(gs, hs) else None,
               f"{gs / hs:.2f}x ({fmt_int(gs)} vs {fmt_int(hs)} req/s; p99 {fmt_ms(num('gatehouse', sc, 'p99_ms'))} "
               f"vs {fmt_ms(num(other, sc, 'p99_ms'))}{rounds})" if have(gs, hs) else "missing",
               ("gatehouse", sc), (other, sc))
    if other == "envoy-jwt":
        gp, ep = num("gatehouse", "a", "p99_ms"), num(other, "a", "p99_ms")
        target(f"(a) gatehouse p99 <= {other} p99 (one valid token)", gp <= ep if have(gp, ep) else None,
               f"{gp / ep:.2f}x ({fmt_ms(gp)} vs {fmt_ms(ep)})" if have(gp, ep) else "missing",
               ("gatehouse", "a"), (other, "a"))
aa, ap = num("gatehouse", "a-assertion", "rps"), num("gatehouse", "a-plain", "rps")
target("(a) with [assertion] >= 0.95x without (a-plain, the process just before)", aa >= 0.95 * ap if have(aa, ap) else None,
       f"{aa / ap:.2f}x ({fmt_int(aa)} vs {fmt_int(ap)} req/s)" if have(aa, ap) else "missing", ("gatehouse", "a-assertion"), ("gatehouse", "a-plain"))
aq, pq = num("gatehouse", "a-assertion", "p99_ms"), num("gatehouse", "a-plain", "p99_ms")
target("(a) with [assertion] p99 <= 1.1x without", aq <= 1.1 * pq if have(aq, pq) else None,
       f"{aq / pq:.2f}x ({fmt_ms(aq)} vs {fmt_ms(pq)})" if have(aq, pq) else "missing", ("gatehouse", "a-assertion"), ("gatehouse", "a-plain"))
for sc, times, what in [("a-trace0", 0.97, "sampling_ratio 0"), ("a-trace1", 0.85, "every request sampled")]:
    ratios = round_ratios(sc)
    target(f"(a) with [tracing], {what}, >= {times:.2f}x tracing off (median of alternating rounds)",
           median(ratios) >= times if ratios else None,
           f"{median(ratios):.2f}x ({', '.join(f'{x:.2f}' for x in ratios)})" if ratios else "missing",
           ("gatehouse", sc), ("gatehouse", "a-traceoff"))
bs, bm = num("gatehouse", "b-assertion", "signatures"), num("gatehouse", "b-assertion", "cache_misses")
target("(b) with [assertion] at most one signature per new token", bs <= bm if have(bs, bm) else None,
       f"{fmt_int(bs)} signatures for {fmt_int(bm)} verified tokens" if have(bs, bm) else "missing", ("gatehouse", "b-assertion"))
og, oa = num("gatehouse", "g", "rps"), num("gatehouse", "a-opaque", "rps")
target("(g) opaque token on the cache-hit path within 10% of the JWT path (a)", og >= 0.9 * oa if have(og, oa) else None,
       f"{og / oa:.2f}x ({fmt_int(og)} vs {fmt_int(oa)} req/s)" if have(og, oa) else "missing", ("gatehouse", "g"), ("gatehouse", "a-opaque"))
hp, gp99 = num("gatehouse", "h", "p99_ms"), num("gatehouse", "g", "p99_ms")
target("(h) valid opaque token's p99 during a random-token flood <= 2x its quiet p99 (g)", hp <= 2 * gp99 if have(hp, gp99) else None,
       f"{hp / gp99:.2f}x ({fmt_ms(hp)} vs {fmt_ms(gp99)}; flood {data[('gatehouse', 'h')].get('flood_rps', '?')} req/s)"
       if have(hp, gp99) else "missing", ("gatehouse", "h"), ("gatehouse", "g"))
gd, nd = num("gatehouse", "d", "mibs"), num("nginx", "d", "mibs")
target("(d) gatehouse upload throughput >= 0.8x nginx", gd >= 0.8 * nd if have(gd, nd) else None,
       f"{gd / nd:.2f}x ({gd:.1f} vs {nd:.1f} MiB/s)" if have(gd, nd) else "missing",
       ("gatehouse", "d"), ("nginx", "d"))
growth = num("gatehouse", "d", "rss_growth_kib")
target("(d) gatehouse RSS growth during uploads < 32 MiB",
       growth < 32 * 1024 if have(growth) else None,
       fmt_mib(growth) if have(growth) else "missing", ("gatehouse", "d"))
idle = [x for x in (num("gatehouse", "e", "rss_start_kib"), num("gatehouse", "e", "rss_warm_kib")) if x is not None]
target("(e) gatehouse RSS idle <= 64 MiB (after start and after warm-up)",
       max(idle) <= 64 * 1024 if idle else None,
       " / ".join(fmt_mib(x) for x in idle) if idle else "missing")
conns = num("gatehouse", "e", "rss_conns_kib")
target(f"(e) gatehouse RSS with {meta.get('idle_connections', '?')} connections <= 160 MiB",
       conns <= 160 * 1024 if have(conns) else None,
       f"{fmt_mib(conns)} ({data[('gatehouse', 'e')].get('conns', '?')} connections open)"
       if have(conns) else "missing", ("gatehouse", "e"))

# Target (b), second half: the verify step within 1.5x of openssl's verify time for the same key.
verify_rows = []
for algorithm in ("RS256", "PS256", "ES256", "EdDSA"):
    ours, theirs = num("gatehouse", f"verify-{algorithm}", "rate"), num("openssl", f"verify-{algorithm}", "rate")
    if not have(ours, theirs):
        continue
    slower = theirs / ours  # how many times openssl's verify time ours takes
    verify_rows.append(f"| {algorithm} | {fmt_int(ours)}/s ({1e6 / ours:.1f} µs) | {fmt_int(theirs)}/s ({1e6 / theirs:.1f} µs) | {slower:.2f}x |")
    target(f"(b) {algorithm} parse + verify within 1.5x of openssl speed's verify time", slower <= 1.5,
           f"{slower:.2f}x ({1e6 / ours:.1f} vs {1e6 / theirs:.1f} µs)")

# --- output ----------------------------------------------------------------------------------------
header = ["scenario", "contender", "result", "p50", "p99", "vs nginx", "notes"]
widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
def line(cells):
    return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

out = [
    f"Gatehouse benchmark, {meta.get('date', '?')}: {meta.get('cpu', '?')}; wrk + upstream on CPU 0, "
    f"contender on CPU 1; {meta.get('connections', '?')} connections, {meta.get('duration', '?')} per "
    f"measurement.",
    f"Versions: gatehouse {meta.get('gatehouse', '?')}, nginx {meta.get('nginx', '?')}, "
    f"{meta.get('apache', '?')} ({meta.get('apache_mpm', '?')}) with mod_auth_openidc "
    f"{meta.get('mod_auth_openidc', '?')}, HAProxy {meta.get('haproxy', '?')} (nbthread 1), "
    f"Envoy {meta.get('envoy', '?')} (--concurrency 1), "
    f"wrk {meta.get('wrk', '?')}.",
    "",
    line(header),
    "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    *(line(r) for r in rows),
    "",
    "\"vs nginx\": ratio to the nginx proxy in the same scenario (for RSS: memory relative to nginx's). "
    "nginx has no auth, so its (c) row is a plain forward of the same requests, not a 401 path. "
    "RSS sums all of a contender's processes (nginx master + worker, Apache parent + child); "
    "direct has no proxy process, hence no RSS rows. "
    "HAProxy (jwt_verify on every request, no cache) and Envoy (jwt_authn, verified-token cache of "
    "the size of Gatehouse's) run scenarios a, b, c only.",
    "",
    *((["Verify step (strict parse + signature check of a token never seen before, one core):", "",
        "| algorithm | gatehouse bench-verify | openssl speed verify | gatehouse time / openssl time |",
        "|---|---|---|---|", *verify_rows, ""]) if verify_rows else []),
    *(([f"DPoP proof check alone (strict parse, jwk, thumbprint, ES256 signature, one core): "
        f"{fmt_int(num('gatehouse', 'verify-dpop', 'rate'))}/s ({1e6 / num('gatehouse', 'verify-dpop', 'rate'):.1f} µs)."]
       if num("gatehouse", "verify-dpop", "rate") else [])),
    *(([f"DPoP replay cache at {meta['dpop_replay']}.", ""]) if meta.get("dpop_replay") else [""]),
    *(([f"Introspection cache: {meta['introspection_cache']}.", ""]) if meta.get("introspection_cache") else []),
    "Targets:",
    "",
    *targets,
]
text = "\n".join(out) + "\n"
print(text, end="")
with open(summary_path, "w") as f:
    f.write(text)
