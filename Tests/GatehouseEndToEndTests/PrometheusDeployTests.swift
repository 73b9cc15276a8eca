#if canImport(Glibc)
import Glibc
import GatehouseVocabulary
#endif
import AsyncHTTPClient
import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing
import GatehouseConfig
import GatehouseTokens
import GatehouseAuth

/// The alerting rules and the dashboard of `deploy/` (README "Alerts and dashboard"): promtool accepts the
/// rules and their unit tests pass; every series the rules, their tests and the dashboard name is one a running
/// Gatehouse exports, with the labels and label values it has; and Debian's real Prometheus, scraping a real
/// Gatehouse, stores its series, loads the rules (each evaluates; GatehouseNotReady goes pending, as a provider
/// has no keys, and the revocation-store alerts stay quiet) and answers every dashboard query with data.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct PrometheusDeployTests {
    /// (a) `promtool check rules` finds every alert of the file (so the line reader below sees them all too), and
    /// `promtool test rules` passes, with a case where each alert fires and one where it must not.
    @Test func promtoolChecksTheRulesAndTheirUnitTestsPass() async throws {
        let promtool = try DeployFiles.binary("promtool")
        let rules = try DeployFiles.text(DeployFiles.rules)
        let alerts = DeployFiles.alertNames(rules)
        #expect(alerts.count >= 19, "\(alerts)")
        #expect(Set(alerts).count == alerts.count, "an alert name twice: \(alerts)")
        #expect(DeployFiles.expressions(rules).count == alerts.count, "every rule's expr is read: \(DeployFiles.expressions(rules))")

        let check = try await ChildProcess.runToEnd([promtool, "check", "rules", DeployFiles.rules])
        #expect(check.exitCode == 0, "\(check.output)")
        #expect(check.output.contains("SUCCESS: \(alerts.count) rules found"), "\(check.output)")

        let unitTests = try await ChildProcess.runToEnd([promtool, "test", "rules", DeployFiles.ruleTests])
        #expect(unitTests.exitCode == 0, "\(unitTests.output)")
        #expect(unitTests.output.contains("SUCCESS"), "\(unitTests.output)")

        let cases = DeployFiles.ruleTestCases(try DeployFiles.text(DeployFiles.ruleTests))
        for alert in alerts {
            #expect(cases.contains { $0.alert == alert && $0.fires }, "no promtool case where \(alert) fires")
            #expect(cases.contains { $0.alert == alert && !$0.fires }, "no promtool case where \(alert) must stay quiet")
        }
        #expect(Set(cases.map(\.alert)).isSubset(of: alerts), "a test of an alert the rules do not have: \(cases.map(\.alert))")
    }

    /// (b) Every series the rules, their promtool tests and the dashboard select exists in `/metrics` of a running
    /// Gatehouse with every optional part on (`[ext_authz]`, `[assertion]`, an introspection provider, a provider
    /// whose fetches fail): its name (a histogram's `_bucket`/`_sum`/`_count` included), each label a selector
    /// matches on, and each value it matches (`reason`: Gatehouse's reason codes).
    /// Every alert has a `runbook_url` (the mixin convention), and each points at a section of deploy/prometheus/README.md
    /// that exists: `#<alert name in lower case>`, a `### <alert name>` heading.
    @Test func everyAlertsRunbookURLIsASectionThatExists() throws {
        let rules = try DeployFiles.text(DeployFiles.rules)
        let readme = try DeployFiles.text(DeployFiles.root + "/deploy/prometheus/README.md")
        let headings = Set(readme.split(separator: "\n").filter { $0.hasPrefix("### ") }.map { $0.dropFirst(4).lowercased() })
        let alerts = rules.split(separator: "\n").compactMap { line -> String? in
            let trimmed = line.drop { $0 == " " }
            return trimmed.hasPrefix("- alert: ") ? String(trimmed.dropFirst(9)) : nil
        }
        let anchors = rules.split(separator: "\n").compactMap { line -> String? in
            guard let range = line.range(of: "README.md#") else { return nil }
            return String(line[range.upperBound...].prefix { $0 != "\"" })
        }
        #expect(alerts.count >= 20 && anchors.count == alerts.count, "\(alerts.count) alerts, \(anchors.count) runbook_url")
        for (alert, anchor) in zip(alerts, anchors) {
            #expect(anchor == alert.lowercased(), "\(alert): \(anchor)")
            #expect(headings.contains(anchor), "\(alert): no section ### \(alert) in the README")
        }
    }

    @Test func everySeriesTheRulesAndTheDashboardSelectIsExported() async throws {
        try await Self.withEveryOptionalSeries { env in
            let refused = try await env.request("/v1/orders")
            #expect(refused.status == 401, "\(refused.body)")
            let failed = await Contract.eventually {
                let text = MetricsText((try? await env.admin("/metrics").body) ?? "")
                return (text.value("gatehouse_jwks_fetches_total", ["provider": "never", "result": "failure"]) ?? 0) >= 1
            }
            #expect(failed, "the keyless provider's failed fetch is never counted")
            let exported = ExportedSeries(MetricsText(try await env.admin("/metrics").body))

            let rules = try DeployFiles.text(DeployFiles.rules)
            let alerts = DeployFiles.alertNames(rules)
            let expressions = DeployFiles.expressions(rules)
            #expect(!expressions.isEmpty && expressions.count == alerts.count)
            var checked = 0
            for (alert, expression) in zip(alerts, expressions) {
                checked += exported.check(PromQLSelector.all(in: expression), in: "rule \(alert)")
            }
            for series in DeployFiles.inputSeries(try DeployFiles.text(DeployFiles.ruleTests)) {
                checked += exported.check(PromQLSelector.all(in: series), in: "promtool input series \(series)")
            }
            let queries = try DeployFiles.dashboardQueries(try DeployFiles.text(DeployFiles.dashboard))
            #expect(queries.count >= 38, "\(queries)")
            for (place, query) in queries {
                let selectors = PromQLSelector.all(in: query)
                #expect(!selectors.isEmpty, "\(place): no series selected by \(query)")
                checked += exported.check(selectors, in: place)
            }
            #expect(checked > 100, "only \(checked) selectors checked")
        }
    }

    /// (c) Debian's Prometheus on loopback scrapes a running Gatehouse every second with the deploy rules loaded:
    /// the requests sent (3 forwarded, 1 refused without a token) come back through its query API with their
    /// values; `/api/v1/rules` lists exactly the file's alerts, each evaluated without error, with a severity and
    /// its summary, description and runbook; `gatehouse_ready` is 0 (a provider has no keys) and GatehouseNotReady
    /// pending for this replica alone, while the memory store is up with nothing unsaved and the revocation-store
    /// alerts are inactive; every metric name used is in Prometheus's store (`up` included); and every dashboard
    /// query answers with data.
    @Test func aRealPrometheusScrapesGatehouseAndLoadsTheRules() async throws {
        let rules = try DeployFiles.text(DeployFiles.rules)
        let alerts = DeployFiles.alertNames(rules)
        try await Self.withEveryOptionalSeries { env in
            try await TestPrometheus.with(scraping: env.adminPort, rules: DeployFiles.rules) { prometheus in
                let token = TestSigner.ec.token(claims: Claims.valid())
                for _ in 0..<3 { #expect(try await env.request("/v1/orders", token: token).status == 200) }
                #expect(try await env.request("/v1/orders").status == 401)

                let instance = "127.0.0.1:\(env.adminPort)"
                func value(_ query: String) async -> (String, [String: String])? {
                    guard let results = try? await prometheus.query(query), results.count == 1,
                          let metric = results[0]["metric"] as? [String: String], let value = results[0]["value"] as? [Any],
                          value.count == 2, let text = value[1] as? String else { return nil }
                    return (text, metric)
                }
                let unauthorized = #"gatehouse_requests_total{route_auth="required",outcome="unauthorized"}"#
                let forwarded = #"gatehouse_requests_total{route_auth="required",outcome="forwarded"}"#
                let scraped = await Contract.eventually(timeout: .seconds(20)) {
                    let (refusals, forwards) = (await value(unauthorized)?.0, await value(forwarded)?.0)
                    return refusals == "1" && forwards == "3"
                }
                let (seenUnauthorized, seenForwarded) = (await value(unauthorized), await value(forwarded))
                #expect(scraped, "Prometheus has \(String(describing: seenUnauthorized)), \(String(describing: seenForwarded))")
                let metric = seenUnauthorized?.1 ?? [:]
                #expect(metric["job"] == "gatehouse" && metric["instance"] == instance, "\(metric)")
                #expect(try await prometheus.query("gatehouse_requests_total").count == 28)
                // Readiness and the revocation store, as Prometheus has them: not ready (the provider `never` has no
                // keys), the memory store connected with nothing unsaved.
                #expect(await value("gatehouse_ready")?.0 == "0")
                #expect(await value("gatehouse_revocation_store_up")?.0 == "1")
                #expect(await value("gatehouse_revocation_store_unsaved")?.0 == "0")

                // The rules: loaded from the deploy file, evaluated, and GatehouseNotReady pending for this replica only.
                var lastRules: [[String: Any]] = []
                let evaluated = await Contract.eventually(timeout: .seconds(20)) {
                    guard let groups = try? await prometheus.rules() else { return false }
                    lastRules = groups.flatMap { $0["rules"] as? [[String: Any]] ?? [] }
                    let healthy = lastRules.allSatisfy { $0["health"] as? String == "ok" }
                    let notReady = lastRules.first { $0["name"] as? String == "GatehouseNotReady" }
                    return healthy && lastRules.count == alerts.count && TestPrometheus.alertInstances(notReady) == [instance]
                }
                #expect(evaluated, "rules: \(lastRules)")
                let groups = try await prometheus.rules()
                #expect(groups.map { $0["file"] as? String } == [DeployFiles.rules], "\(groups.map { $0["file"] ?? "" })")
                #expect(lastRules.compactMap { $0["name"] as? String } == alerts)
                for rule in lastRules {
                    let name = rule["name"] as? String ?? "?"
                    #expect(rule["type"] as? String == "alerting", "\(name)")
                    #expect(((rule["lastError"] as? String) ?? "").isEmpty, "\(name): \(rule)")
                    let annotations = rule["annotations"] as? [String: String] ?? [:]
                    for key in ["summary", "description", "runbook"] {
                        #expect((annotations[key] ?? "").count >= 20, "\(name) has no \(key): \(annotations)")
                    }
                    let labels = rule["labels"] as? [String: String] ?? [:]
                    #expect(["critical", "warning"].contains(labels["severity"] ?? ""), "\(name): \(labels)")
                }
                let notReady = lastRules.first { $0["name"] as? String == "GatehouseNotReady" }
                #expect(["pending", "firing"].contains(notReady?["state"] as? String ?? ""), "\(String(describing: notReady))")
                for name in ["GatehouseRevocationStoreDown", "GatehouseRevocationStoreBacklog"] {
                    let rule = lastRules.first { $0["name"] as? String == name }
                    #expect(rule?["state"] as? String == "inactive" && TestPrometheus.alertInstances(rule).isEmpty,
                            "\(name): \(String(describing: rule))")
                }

                // Every metric name of the rules and the dashboard is in Prometheus's store (`up`: its own).
                let stored = Set(try await prometheus.names())
                let queries = try DeployFiles.dashboardQueries(try DeployFiles.text(DeployFiles.dashboard))
                let used = Set((DeployFiles.expressions(rules) + queries.map(\.1)).flatMap { PromQLSelector.all(in: $0).map(\.metric) })
                #expect(used.contains("up") && used.contains("gatehouse_requests_total"), "\(used.sorted())")
                #expect(used.subtracting(stored).isEmpty, "not in Prometheus: \(used.subtracting(stored).sorted()); stored: \(stored.sorted())")

                // Every dashboard query, with its variables filled in as Grafana would, answers with data.
                var empty: [String] = []
                let answered = await Contract.eventually(timeout: .seconds(20)) {
                    empty = []
                    for (place, query) in queries {
                        let filled = query.replacingOccurrences(of: "$__rate_interval", with: "1m")
                            .replacingOccurrences(of: "$job", with: "gatehouse").replacingOccurrences(of: "$instance", with: instance)
                        if ((try? await prometheus.query(filled))?.count ?? 0) == 0 { empty.append("\(place): \(filled)") }
                    }
                    return empty.isEmpty
                }
                #expect(answered, "dashboard queries without data (or refused): \(empty)")
            }
        }
    }

    /// Gatehouse with every optional series: a provider whose key server is a closed port (its fetches fail), an
    /// introspection provider, `[ext_authz]` and `[assertion]`; it runs once the JWKS provider `test` has keys.
    static func withEveryOptionalSeries(_ body: (TestEnvironment) async throws -> Void) async throws {
        let closed = try await freeLoopbackPort()
        let keys = try AssertionTests.KeyFiles()
        defer { keys.remove() }
        let signingKey = try AssertionKey.load(file: try keys.p256("signing.pem"), needs: .privateKey)
        try await TestEnvironment.run(waitForKeys: false, configure: { configuration, jwks in
            MetricsContractTests.withAKeylessProvider(closed)(&configuration, jwks)
            var opaque = ProviderSettings(name: "opaque", type: .introspection)
            opaque.introspection.endpoint = URL(string: "http://127.0.0.1:\(closed)/introspect")!
            opaque.introspection.clientID = "gatehouse"
            opaque.introspection.clientSecret = .inline("not-used")
            configuration.providers.append(opaque)
            configuration.extAuthz = ExtAuthzSettings(address: SocketAddressSetting(host: "127.0.0.1", port: 0))
            configuration.assertion = AssertionSettings(issuer: "https://gatehouse.test", audience: "orders", signingKey: signingKey)
        }) { env in
            let ready = await Contract.eventually { env.gatehouse.keyStore.status().first { $0.provider == "test" }?.usable == true }
            try #require(ready, "provider test never got its keys")
            try await body(env)
        }
    }
}

/// The deploy files, and what the tests read from them. The YAML files are read line by line (the rules' `expr`
/// values, plain or `|` blocks; promtool's `series`), which test (a) proves complete against promtool's own count.
enum DeployFiles {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let rules = root + "/deploy/prometheus/gatehouse-rules.yml"
    static let ruleTests = root + "/deploy/prometheus/gatehouse-rules.test.yml"
    static let dashboard = root + "/deploy/grafana/gatehouse-dashboard.json"

    static func text(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

    /// Debian's `prometheus` package (scripts/test.sh installs it).
    static func binary(_ name: String) throws -> String {
        guard let path = ["/usr/bin/\(name)", "/usr/local/bin/\(name)"].first(where: FileManager.default.isExecutableFile) else {
            throw ChildProcess.Failed(description: "\(name) not found: apt-get install prometheus (scripts/test.sh does)")
        }
        return path
    }

    /// The `- alert: Name` entries, in order.
    static func alertNames(_ yaml: String) -> [String] {
        values(of: "- alert", in: yaml)
    }

    /// Every rule's `expr`, in order.
    static func expressions(_ yaml: String) -> [String] {
        values(of: "expr", in: yaml)
    }

    /// promtool's `input_series` selectors.
    static func inputSeries(_ yaml: String) -> [String] {
        values(of: "- series", in: yaml)
    }

    /// The `alert_rule_test` cases: which alert, and whether it is expected to fire (`exp_alerts` not `[]`).
    static func ruleTestCases(_ yaml: String) -> [(alert: String, fires: Bool)] {
        zip(values(of: "alertname", in: yaml), values(of: "exp_alerts", in: yaml)).map { ($0, $1 != "[]") }
    }

    /// The values of `key:` lines: a plain or quoted scalar on the line, or a `|` / `>` block below it.
    private static func values(of key: String, in yaml: String) -> [String] {
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false)
        var found: [String] = []
        var index = 0
        while index < lines.count {
            let line = lines[index]
            let indent = line.prefix { $0 == " " }.count
            index += 1
            let content = line.dropFirst(indent)
            guard content.hasPrefix(key + ":") else { continue }
            var value = content.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces)
            if value.hasPrefix("|") || value.hasPrefix(">") {
                var block: [Substring] = []
                while index < lines.count,
                      lines[index].trimmingCharacters(in: .whitespaces).isEmpty || lines[index].prefix(while: { $0 == " " }).count > indent {
                    block.append(lines[index])
                    index += 1
                }
                value = block.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "\n")
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            } else if value.count >= 2, let quote = value.first, quote == "'" || quote == "\"", value.last == quote {
                value = String(value.dropFirst().dropLast())
            }
            found.append(value)
        }
        return found
    }

    /// Every PromQL query of the dashboard: each panel's targets (rows' nested panels too), and each query
    /// variable's `label_values(<selector>, label)` selector. Also requires each panel to have a query.
    static func dashboardQueries(_ json: String) throws -> [(String, String)] {
        let dashboard = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        var queries: [(String, String)] = []
        func walk(_ panels: [[String: Any]]) {
            for panel in panels {
                let title = panel["title"] as? String ?? "?"
                if panel["type"] as? String == "row" {
                    walk(panel["panels"] as? [[String: Any]] ?? [])
                    continue
                }
                let targets = panel["targets"] as? [[String: Any]] ?? []
                #expect(!targets.isEmpty, "panel \(title) has no query")
                for target in targets {
                    let expression = target["expr"] as? String ?? ""
                    #expect(!expression.isEmpty, "panel \(title): a target without expr")
                    queries.append(("panel \(title)", expression))
                }
            }
        }
        walk(dashboard["panels"] as? [[String: Any]] ?? [])
        let variables = (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        for variable in variables where variable["type"] as? String == "query" {
            let name = variable["name"] as? String ?? "?"
            let query = (variable["query"] as? String) ?? ((variable["query"] as? [String: Any])?["query"] as? String) ?? ""
            guard query.hasPrefix("label_values("), query.hasSuffix(")"), let comma = query.lastIndex(of: ",") else {
                Issue.record("variable \(name): not label_values(<selector>, <label>): \(query)")
                continue
            }
            queries.append(("variable \(name)", String(query[query.index(query.startIndex, offsetBy: 13)..<comma])))
        }
        #expect((dashboard["schemaVersion"] as? Int ?? 0) >= 36, "schemaVersion")
        return queries
    }
}

/// What `/metrics` of a running Gatehouse exports: the names, and each name's labels and values.
struct ExportedSeries {
    /// Made by Prometheus itself, not by Gatehouse.
    static let prometheusOwn: Set<String> = ["up"]
    let metrics: MetricsText
    private var labels: [String: [String: Set<String>]] = [:]

    init(_ metrics: MetricsText) {
        self.metrics = metrics
        for series in metrics.values.keys {
            var known = labels[series.name] ?? [:]
            for (label, value) in series.labels { known[label, default: []].insert(value) }
            labels[series.name] = known
        }
    }

    /// Records an issue for each selector whose name, label or value Gatehouse does not export; the count checked.
    func check(_ selectors: [PromQLSelector], in place: String, sourceLocation: SourceLocation = #_sourceLocation) -> Int {
        for selector in selectors where !Self.prometheusOwn.contains(selector.metric) {
            var name = selector.metric
            if labels[name] == nil, let suffix = ["_bucket", "_sum", "_count"].first(where: { name.hasSuffix($0) }),
               metrics.types[String(name.dropLast(suffix.count))] == "histogram" {
                name = String(name.dropLast(suffix.count))
            }
            guard let known = labels[name] else {
                Issue.record("\(place): \(selector.metric) is not in Gatehouse's /metrics", sourceLocation: sourceLocation)
                continue
            }
            // job and instance are Prometheus's target labels; `le`'s values are the buckets of the case at hand.
            for matcher in selector.matchers where !["job", "instance"].contains(matcher.label) {
                guard let values = known[matcher.label] else {
                    Issue.record("\(place): \(selector.metric) has no label \(matcher.label) (it has \(known.keys.sorted()))",
                                 sourceLocation: sourceLocation)
                    continue
                }
                guard !["le", "provider"].contains(matcher.label), !matcher.value.contains("$") else { continue }
                let allowed = matcher.label == "reason" ? Set(FailureReason.allCases.map(\.rawValue)) : values
                for value in matcher.literalValues where !allowed.contains(value) {
                    Issue.record("\(place): \(selector.metric){\(matcher.label)=\"\(value)\"} never exists (values: \(allowed.sorted()))",
                                 sourceLocation: sourceLocation)
                }
            }
        }
        return selectors.count
    }
}

/// A vector selector of a PromQL expression: its metric name and label matchers. Reads as much PromQL as the
/// deploy files use: strings, ranges, numbers and durations, Grafana `$variables`, functions, aggregations,
/// binary operators and their grouping clauses are skipped; every other identifier is a metric name.
struct PromQLSelector: Hashable {
    struct Matcher: Hashable {
        var label: String
        var op: String
        var value: String

        /// The values a matcher names: its value for `=` and `!=`, each alternative of a regex made only of
        /// literal alternatives (`a|b`), none for other regexes.
        var literalValues: [String] {
            guard op.hasSuffix("~") else { return [value] }
            guard value.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "|" }) else { return [] }
            return value.split(separator: "|").map(String.init)
        }
    }

    var metric: String
    var matchers: [Matcher]

    private static let grouping: Set<String> = ["by", "without", "on", "ignoring", "group_left", "group_right"]
    private static let keywords: Set<String> = [
        "and", "or", "unless", "offset", "bool", "atan2", "inf", "nan", "Inf", "NaN",
        "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile",
    ]

    static func all(in expression: String) -> [PromQLSelector] {
        let text = Array(expression.utf8)
        var selectors: [PromQLSelector] = []
        func isWord(_ byte: UInt8) -> Bool {
            (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x5F || byte == 0x3A
        }
        func skipSpace(_ at: Int) -> Int {
            var at = at
            while at < text.count, [0x20, 0x09, 0x0A, 0x0D].contains(text[at]) { at += 1 }
            return at
        }
        /// From an opening quote to after the closing one; the unescaped contents.
        func string(_ at: Int) -> (String, Int) {
            let quote = text[at]
            var at = at + 1
            var bytes: [UInt8] = []
            while at < text.count, text[at] != quote {
                if text[at] == 0x5C, quote != 0x60, at + 1 < text.count { at += 1 }
                bytes.append(text[at])
                at += 1
            }
            return (String(decoding: bytes, as: UTF8.self), at + 1)
        }
        func balanced(_ at: Int, _ open: UInt8, _ close: UInt8) -> Int {
            var depth = 0
            var at = at
            while at < text.count {
                switch text[at] {
                case 0x22, 0x27, 0x60: at = string(at).1; continue
                case open: depth += 1
                case close:
                    depth -= 1
                    if depth == 0 { return at + 1 }
                default: break
                }
                at += 1
            }
            return at
        }
        func word(_ at: Int) -> (String, Int) {
            var end = at
            while end < text.count, isWord(text[end]) { end += 1 }
            return (String(decoding: text[at..<end], as: UTF8.self), end)
        }
        func matchers(_ at: Int) -> ([Matcher], Int) {
            var found: [Matcher] = []
            var at = at + 1
            while true {
                at = skipSpace(at)
                guard at < text.count, text[at] != 0x7D else { return (found, at + 1) }
                if text[at] == 0x2C { at += 1; continue }
                let (label, afterLabel) = word(at)
                var opEnd = skipSpace(afterLabel)
                let opStart = opEnd
                while opEnd < text.count, [0x3D, 0x21, 0x7E].contains(text[opEnd]) { opEnd += 1 }
                let op = String(decoding: text[opStart..<opEnd], as: UTF8.self)
                let valueStart = skipSpace(opEnd)
                guard !label.isEmpty, valueStart < text.count, [0x22, 0x27, 0x60].contains(text[valueStart]) else {
                    // Not a matcher list this reader knows: its matchers so far, up to the closing brace.
                    while at < text.count, text[at] != 0x7D { at += 1 }
                    return (found, at + 1)
                }
                let (value, next) = string(valueStart)
                found.append(Matcher(label: label, op: op, value: value))
                at = next
            }
        }
        var at = 0
        while at < text.count {
            let byte = text[at]
            switch byte {
            case 0x22, 0x27, 0x60:
                at = string(at).1
            case 0x5B:  // a range or subquery: [5m], [$__rate_interval], [1h:1m]
                at = balanced(at, 0x5B, 0x5D)
            case 0x7B:  // a selector without a name: {__name__="x"}
                let (found, next) = matchers(at)
                if let name = found.first(where: { $0.label == "__name__" && $0.op == "=" }) {
                    selectors.append(PromQLSelector(metric: name.value, matchers: found.filter { $0.label != "__name__" }))
                }
                at = next
            case 0x24:  // a Grafana variable: $job, ${job}, $__rate_interval
                at += 1
                if at < text.count, text[at] == 0x7B { at = balanced(at, 0x7B, 0x7D) } else { at = word(at).1 }
            case 0x30...0x39, 0x2E:  // a number or a duration: 0.99, 1e3, 5m, 1h30m
                while at < text.count, isWord(text[at]) || text[at] == 0x2E { at += 1 }
            default:
                guard isWord(byte) else {
                    at += 1
                    continue
                }
                let (name, end) = word(at)
                let next = skipSpace(end)
                if grouping.contains(name) {
                    at = next < text.count && text[next] == 0x28 ? balanced(next, 0x28, 0x29) : next
                } else if keywords.contains(name) || (next < text.count && text[next] == 0x28) {
                    at = end  // an operator, an aggregation or a function
                } else if next < text.count, text[next] == 0x7B {
                    let (found, after) = matchers(next)
                    selectors.append(PromQLSelector(metric: name, matchers: found))
                    at = after
                } else {
                    selectors.append(PromQLSelector(metric: name, matchers: []))
                    at = end
                }
            }
        }
        return selectors
    }
}

/// Debian's Prometheus (`/usr/bin/prometheus`) on a free loopback port, with its own storage directory, scraping
/// one Gatehouse admin port every second (job `gatehouse`) and evaluating `rules` every second.
struct TestPrometheus {
    let port: Int
    let directory: String

    /// Starts Prometheus, runs `body`, stops it (SIGTERM, then SIGKILL) and removes its directory. The port is
    /// found free, then given to Prometheus: a test beside this one may take it in between, so this Prometheus is
    /// only trusted once its flags name this start's storage directory, and started again on another port if not.
    /// - Parameter scrapeConfigs: the `scrape_configs` entries (YAML list items, each line indented by two spaces); by default one job
    ///   `gatehouse` with `adminPort` as its target.
    static func with<T: Sendable>(
        scraping adminPort: Int, rules: String, scrapeConfigs: String? = nil, _ body: (TestPrometheus) async throws -> T
    ) async throws -> T {
        let binary = try DeployFiles.binary("prometheus")
        var lastError = ""
        for _ in 0..<3 {
            let prometheus = TestPrometheus(port: try await freeLoopbackPort(), directory: try Contract.makeDirectory("prometheus"))
            defer { try? FileManager.default.removeItem(atPath: prometheus.directory) }
            try """
                global:
                  scrape_interval: 1s
                  scrape_timeout: 1s
                  evaluation_interval: 1s
                rule_files:
                  - "\(rules)"
                scrape_configs:
                \(scrapeConfigs ?? "  - job_name: gatehouse\n    static_configs:\n      - targets: [\"127.0.0.1:\(adminPort)\"]")

                """.write(toFile: prometheus.directory + "/prometheus.yml", atomically: true, encoding: .utf8)
            let output = prometheus.directory + "/output.log"
            let pid = try ChildProcess.spawn([
                binary, "--config.file=\(prometheus.directory)/prometheus.yml", "--storage.tsdb.path=\(prometheus.directory)/data",
                "--web.listen-address=127.0.0.1:\(prometheus.port)", "--log.level=warn",
            ], outputPath: output)
            defer { ChildProcess.stop(pid) }
            var exited = false
            let started = await Contract.eventually(timeout: .seconds(30)) {
                if await prometheus.isThisOne() { return true }
                exited = waitpid(pid, nil, WNOHANG) == pid
                return exited
            }
            if started, !exited {
                return try await body(prometheus)
            }
            lastError = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        }
        throw ChildProcess.Failed(description: "prometheus did not start: \(lastError)")
    }

    /// Ready, and its storage path is this start's.
    private func isThisOne() async -> Bool {
        guard (try? await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/-/ready"), timeout: .seconds(2)))?
            .status == .ok,
            let flags = try? await api("/api/v1/status/flags") as? [String: String] else { return false }
        return flags["storage.tsdb.path"] == directory + "/data"
    }

    /// `data` of an API answer whose `status` is `success`.
    func api(_ pathAndQuery: String) async throws -> Any {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)\(pathAndQuery)"), timeout: .seconds(5))
        let body = try await response.body.collect(upTo: 8 << 20)
        let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        guard let object, object["status"] as? String == "success", let data = object["data"] else {
            throw ChildProcess.Failed(description: "\(pathAndQuery): \(response.status) \(String(buffer: body))")
        }
        return data
    }

    /// The instant vector of `promql`, now.
    func query(_ promql: String) async throws -> [[String: Any]] {
        let encoded = promql.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let data = try await api("/api/v1/query?query=\(encoded)") as? [String: Any]
        return data?["result"] as? [[String: Any]] ?? []
    }

    /// `/api/v1/rules`: the rule groups.
    func rules() async throws -> [[String: Any]] {
        (try await api("/api/v1/rules") as? [String: Any])?["groups"] as? [[String: Any]] ?? []
    }

    /// Every metric name in the store.
    func names() async throws -> [String] {
        try await api("/api/v1/label/__name__/values") as? [String] ?? []
    }

    /// The `instance` labels of an alerting rule's active (pending or firing) alerts.
    static func alertInstances(_ rule: [String: Any]?) -> [String] {
        (rule?["alerts"] as? [[String: Any]] ?? []).compactMap { ($0["labels"] as? [String: String])?["instance"] }.sorted()
    }
}
