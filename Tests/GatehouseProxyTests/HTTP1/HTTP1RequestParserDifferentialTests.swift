import Foundation
import NIOCore
import NIOHTTP1
import GatehouseTestSupport
import Testing


/// A differential test of Gatehouse's request parser against NIO's llhttp decoder (the parser it replaced):
/// thousands of generated inputs, valid and broken the ways smugglers break them, each cut into random reads.
///
/// - Whatever Gatehouse accepts, llhttp must accept and frame identically: the same heads, bodies, trailers
///   and number of requests. Gatehouse accepting anything llhttp refuses fails the test.
/// - Gatehouse may refuse what llhttp accepts only where the input is in one of the documented `Stricter`
///   classes, and may frame otherwise only in the documented `FramingDifference`.
/// - Cutting the bytes into reads never changes Gatehouse's outcome.
///
/// The run prints how many inputs fell in each class, and fails if a class was hit too rarely (so the
/// generator cannot quietly stop producing what it is meant to).
struct HTTP1RequestParserDifferentialTests {
    typealias Outcome = LLHTTPComparison.Outcome
    typealias Part = LLHTTPComparison.Part
    typealias Decoder = LLHTTPComparison.Decoder

    /// Everything Gatehouse refuses although llhttp accepts it, and why. The one list of them.
    enum Stricter: String, CaseIterable, Hashable {
        case transferCodingOtherThanChunked
        case transferEncodingOnHTTP10
        case extraSpaceInRequestLine
        case rtspVersion
        case contentLengthOver18Digits
        case chunkSizeOver15HexDigits
        case chunkExtensionWithoutNameOrValue
        case bareCROrLFBetweenRequests
        case bytesAfterAClosingRequest
        case bodyBeforeProtocolSwitch
        case targetFormLLHTTPTolerates
        case fieldValueNotUTF8

        var reason: String {
            switch self {
            case .transferCodingOtherThanChunked:
                "a Transfer-Encoding other than exactly one 'chunked' (a list, another coding, two fields, an empty one): "
                    + "Gatehouse re-frames bodies and would lose any other coding"
            case .transferEncodingOnHTTP10: "Transfer-Encoding on HTTP/1.0 (RFC 9112 §6.1: faulty framing)"
            case .extraSpaceInRequestLine: "more than one space between the parts of the request line (RFC 9112 §3)"
            case .rtspVersion: "RTSP/1.0 as the version (llhttp reads it as HTTP/1.0)"
            case .contentLengthOver18Digits: "Content-Length over 18 digits, leading zeros included"
            case .chunkSizeOver15HexDigits: "a chunk size over 15 hex digits, leading zeros included"
            case .chunkExtensionWithoutNameOrValue: "a chunk extension with an empty name (';;', ';=v') or '=' and no value"
            case .bareCROrLFBetweenRequests: "a bare CR or LF before a request line (every line ends CRLF; llhttp skips them)"
            case .bodyBeforeProtocolSwitch:
                "a body (Content-Length or Transfer-Encoding) on a request that switches protocols (Upgrade, CONNECT): "
                    + "where the old protocol would end is anybody's guess (llhttp gives a CONNECT's body to the tunnel)"
            case .targetFormLLHTTPTolerates:
                "a request target llhttp lets through and RFC 9112 §3.2 does not: '*' followed by more, a CONNECT "
                    + "target that is no authority"
            case .fieldValueNotUTF8:
                "a field value whose bytes above 0x7F are not UTF-8 (RFC 9110 §5.5 obs-text): Gatehouse forwards values "
                    + "byte for byte or not at all, and its HTTP/2 door cannot see such bytes (reference §4.9)"
            case .bytesAfterAClosingRequest:
                "a request after one that closes the connection, its Connection field read with OWS trimmed and "
                    + "'close' winning over 'keep-alive' (llhttp misses 'close<HTAB>', and keeps HTTP/1.0 "
                    + "'keep-alive, close' open)"
            }
        }
    }

    /// Where both accept but Gatehouse frames otherwise, on purpose.
    enum FramingDifference: String, CaseIterable, Hashable {
        /// Gatehouse stops at any Upgrade header (it closes after answering); llhttp only with Connection: upgrade.
        case upgradeWithoutConnectionUpgrade
    }

    /// Inputs the generator writes where Gatehouse was once laxer than llhttp (each is refused now, and the
    /// corpus, HTTP1RequestSmugglingCorpusTests, has a case for each). Never excused: they only name the
    /// likely cause when such an input fails again, so that a regression reads "known laxity: …" and a new
    /// disagreement stands out as "no known cause".
    enum KnownLaxity: String {
        case contentLengthThenTab = "Content-Length: <digits><HTAB>"
        case chunkedThenTab = "Transfer-Encoding: chunked<HTAB>"
        case framingFieldInTrailers = "Content-Length or Transfer-Encoding in the trailers"
        case closeInTrailers = "a request after Connection: close in the trailers"
        case doubleAtInAuthority = "'@@' in the authority of an absolute-form or CONNECT target"
        case keepAliveThenTabOnHTTP10 = "a request after HTTP/1.0 Connection: keep-alive<HTAB>"
    }

    /// What a generated request holds that matters when comparing.
    enum Tag: Hashable {
        case stricter(Stricter)
        case knownLaxity(KnownLaxity)
        /// CONNECT or an Upgrade field: Gatehouse parses nothing after this request.
        case switchesProtocols
        case differs(FramingDifference)
    }

    struct GeneratedRequest {
        var bytes: [UInt8] = []
        var tags: Set<Tag> = []

        mutating func append(_ text: String) { bytes += Array(text.utf8) }
        mutating func append(_ more: [UInt8]) { bytes += more }
    }

    struct GeneratedInput {
        var requests: [GeneratedRequest] = []
        /// What the bytes after the last request (a body longer than its Content-Length) may be.
        var tagsAfterLast: Set<Tag> = []
        var bytes: [UInt8] { requests.flatMap(\.bytes) }

        func tags(ofRequest index: Int) -> Set<Tag> {
            index < requests.count ? requests[index].tags : tagsAfterLast
        }
    }


    // MARK: - The run

    static let inputCount = 15000
    /// GATEHOUSE_DIFFERENTIAL_SEED (hex) runs another sequence of inputs.
    static let seed: UInt64 = ProcessInfo.processInfo.environment["GATEHOUSE_DIFFERENTIAL_SEED"].flatMap { UInt64($0, radix: 16) }
        ?? 0x4761_7465_686F_7573

    enum Failure: String, CaseIterable {
        case gatehouseAcceptsWhatLLHTTPRefuses = "Gatehouse accepts what llhttp refuses"
        case framingDiffers = "both accept but frame differently"
        case stricterWithoutDocumentedReason = "Gatehouse refuses what llhttp accepts, in no documented class"
        case readsChangeTheOutcome = "cutting the bytes into reads changes Gatehouse's outcome"
    }

    enum Verdict {
        case bothAccept
        case bothRefuse
        case stricter(Set<Stricter>)
        case framingDifference(FramingDifference)
        /// `at`: the request where the two part.
        case failure(Failure, String, at: Int?)
    }

    @Test func gatehouseAcceptsOnlyWhatLLHTTPAcceptsAndFramesItTheSame() {
        var random = SplitMix64(seed: Self.seed)
        var counts: [String: Int] = [:]
        var stricterCounts: [Stricter: Int] = [:]
        var differenceCounts: [FramingDifference: Int] = [:]
        /// Per failure, per known cause (see `KnownLaxity`): the examples.
        var failures: [Failure: [String: [String]]] = [:]

        for index in 0..<Self.inputCount {
            var generator = RequestGenerator(random: random)
            let input = generator.input()
            let reads = generator.reads(of: input.bytes)
            random = generator.random

            let gatehouse = Decoder.gatehouse.decode(reads)
            let llhttp = Decoder.llhttp.decode(reads)
            var verdict = Self.compare(gatehouse: gatehouse, llhttp: llhttp, input: input)
            if reads.count > 1 {
                let whole = Decoder.gatehouse.decode([input.bytes])
                if whole != gatehouse {
                    verdict = .failure(.readsChangeTheOutcome, "whole: \(whole)\n  in \(reads.count) reads \(reads.map(\.count)): \(gatehouse)", at: nil)
                }
            }
            switch verdict {
            case .bothAccept:
                counts["both accept", default: 0] += 1
            case .bothRefuse:
                counts["both refuse", default: 0] += 1
            case .stricter(let classes):
                counts["Gatehouse stricter", default: 0] += 1
                for stricter in classes { stricterCounts[stricter, default: 0] += 1 }
            case .framingDifference(let difference):
                counts["framed otherwise on purpose", default: 0] += 1
                differenceCounts[difference, default: 0] += 1
            case .failure(let failure, let detail, let requestIndex):
                counts["FAILED: \(failure.rawValue)", default: 0] += 1
                let label = Self.knownCauses(requestIndex.map(input.tags(ofRequest:)) ?? [])
                failures[failure, default: [:]][label, default: []].append(
                    "input \(index) (\(input.bytes.count) bytes): \(LLHTTPComparison.Bytes(input.bytes))\n  \(detail)\n  Gatehouse: \(gatehouse)\n  llhttp:    \(llhttp)")
            }
        }

        print("HTTP/1.1 request parser vs llhttp over \(Self.inputCount) generated inputs (seed \(String(Self.seed, radix: 16))):")
        for (name, count) in counts.sorted(by: { $0.key < $1.key }) { print("  \(name): \(count)") }
        for stricter in Stricter.allCases { print("  Gatehouse stricter, \(stricter.rawValue): \(stricterCounts[stricter, default: 0])") }
        for difference in FramingDifference.allCases { print("  framed otherwise, \(difference.rawValue): \(differenceCounts[difference, default: 0])") }

        for failure in Failure.allCases {
            guard let byCause = failures[failure] else { continue }
            let total = byCause.values.map(\.count).reduce(0, +)
            let shortest = byCause.sorted { $0.key > $1.key }.map { label, examples in
                "[\(label): \(examples.count) inputs] " + examples.sorted { $0.count < $1.count }.prefix(2).joined(separator: "\n")
            }
            Issue.record("\(failure.rawValue): \(total) inputs; the shortest, by cause:\n\(shortest.joined(separator: "\n"))")
        }
        #expect(counts["both accept", default: 0] >= Self.inputCount / 7, "the generator makes enough valid inputs")
        #expect(counts["both refuse", default: 0] >= Self.inputCount / 7, "the generator makes enough broken inputs")
        for stricter in Stricter.allCases {
            #expect(stricterCounts[stricter, default: 0] >= 5, "the generator exercises \(stricter.rawValue)")
        }
        for difference in FramingDifference.allCases {
            #expect(differenceCounts[difference, default: 0] >= 5, "the generator exercises \(difference.rawValue)")
        }
    }

    /// The known laxities among `tags`, as a label for grouping failures.
    static func knownCauses(_ tags: Set<Tag>) -> String {
        var known: [String] = []
        for tag in tags {
            if case .knownLaxity(let laxity) = tag { known.append(laxity.rawValue) }
        }
        return known.isEmpty ? "no known cause" : "known: " + known.sorted().joined(separator: " + ")
    }

    // MARK: - Comparing

    /// The verdict on one input, request by request: the requests both completed must be identical; where one
    /// completed more, the first it alone completed says who is stricter, and why.
    static func compare(gatehouse: Outcome, llhttp: Outcome, input: GeneratedInput) -> Verdict {
        let ours = gatehouse.requests
        let theirs = llhttp.requests
        let tags = input.tags(ofRequest:)

        // After a request that switches protocols Gatehouse parses nothing more: compare up to it.
        if let stop = input.requests.firstIndex(where: { $0.tags.contains(.switchesProtocols) }), !gatehouse.isRefused, ours.count == stop + 1 {
            guard theirs.count > stop else {
                return .failure(.gatehouseAcceptsWhatLLHTTPRefuses, "llhttp refused request \(theirs.count), Gatehouse accepted it and switched protocols", at: theirs.count)
            }
            for index in 0..<stop where ours[index] != theirs[index] {
                return .failure(.framingDiffers, "request \(index) differs", at: index)
            }
            if ours[stop] != theirs[stop] {
                return .failure(.framingDiffers, "request \(stop) (switching protocols) differs", at: stop)
            }
            if theirs.count > stop + 1 || llhttp.isRefused || llhttp.parts.count > gatehouse.parts.count {
                // llhttp went on parsing what Gatehouse leaves to the new protocol.
                guard tags(stop).contains(.differs(.upgradeWithoutConnectionUpgrade)) else {
                    return .failure(.framingDiffers, "llhttp parsed on after request \(stop), which switches protocols for Gatehouse", at: stop)
                }
                return .framingDifference(.upgradeWithoutConnectionUpgrade)
            }
            return .bothAccept
        }

        for index in 0..<min(ours.count, theirs.count) where ours[index] != theirs[index] {
            return .failure(.framingDiffers, "request \(index) differs", at: index)
        }
        let stricterHere = { (index: Int) -> Verdict in
            let classes = Set(tags(index).compactMap { if case .stricter(let stricter) = $0 { stricter } else { nil } })
            return classes.isEmpty
                ? .failure(.stricterWithoutDocumentedReason, "Gatehouse refused request \(index), llhttp accepted it", at: index)
                : .stricter(classes)
        }
        switch (gatehouse.isRefused, llhttp.isRefused) {
        case (false, false):
            return gatehouse.parts == llhttp.parts ? .bothAccept : .failure(.framingDiffers, "the requests differ", at: ours.count)
        case (false, true):
            return .failure(.gatehouseAcceptsWhatLLHTTPRefuses, "llhttp refused request \(theirs.count)", at: theirs.count)
        case (true, false):
            return stricterHere(ours.count)
        case (true, true):
            if ours.count > theirs.count {
                return .failure(.gatehouseAcceptsWhatLLHTTPRefuses, "llhttp refused request \(theirs.count), Gatehouse accepted it", at: theirs.count)
            }
            if ours.count < theirs.count { return stricterHere(ours.count) }
            // Both refused the same request; Gatehouse must not have handed on a head llhttp refused.
            let ourHead = pendingHead(gatehouse)
            let theirHead = pendingHead(llhttp)
            if let ourHead, ourHead != theirHead {
                return .failure(.gatehouseAcceptsWhatLLHTTPRefuses, "Gatehouse handed on the head of request \(ours.count) (\(ourHead)), llhttp \(theirHead.map { "read it as \($0)" } ?? "refused it")", at: ours.count)
            }
            return .bothRefuse
        }
    }

    /// The head of the request after the last completed one, if it was handed on.
    private static func pendingHead(_ outcome: Outcome) -> Part? {
        let pending = outcome.parts.dropFirst(outcome.completedRequestParts.count)
        if let first = pending.first, case .head = first { return first }
        return nil
    }

    // MARK: - Generating

    /// Requests from a grammar mixing valid pieces with the invalid ones smugglers use, each request tagged with
    /// what matters when comparing. Rates are per request (most inputs hold one to three).
    struct RequestGenerator {
        var random: SplitMix64

        mutating func chance(_ probability: Double) -> Bool { Double(random.next() >> 11) / Double(1 << 53) < probability }
        mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
        mutating func pick<T>(_ items: [T]) -> T { items[int(0...(items.count - 1))] }

        mutating func input() -> GeneratedInput {
            var input = GeneratedInput()
            let count = pick([1, 1, 1, 2, 2, 3])
            var tagsForNext: Set<Tag> = []
            for index in 0..<count {
                var request = GeneratedRequest()
                request.tags = tagsForNext
                tagsForNext = []
                between(&request)
                appendRequest(to: &request, isLast: index == count - 1, tagsForNext: &tagsForNext)
                input.requests.append(request)
            }
            if bodyLongerThanItsLength {
                // Empty lines, or a bare CR or LF, after it are fine for llhttp.
                input.tagsAfterLast = tagsForNext.union([.stricter(.bareCROrLFBetweenRequests), .stricter(.bytesAfterAClosingRequest)])
            }
            return input
        }

        /// Random cuts: mostly a few reads at random places, sometimes byte by byte.
        mutating func reads(of bytes: [UInt8]) -> [[UInt8]] {
            if bytes.count > 1 && chance(0.03) { return bytes.map { [$0] } }
            guard bytes.count > 1, chance(0.7) else { return [bytes] }
            let cuts = (0..<int(1...3)).map { _ in int(1...(bytes.count - 1)) }.sorted()
            return bytes.reads(cutAt: cuts)
        }

        /// What comes before a request line: usually nothing; empty lines; bare CRs or LFs.
        mutating func between(_ request: inout GeneratedRequest) {
            switch int(0...99) {
            case 0..<5: request.append("\r\n")
            case 5..<6: request.append("\r\n\r\n")
            case 6..<8:
                request.append(pick(["\n", "\r", "\r\n\n"]))
                request.tags.insert(.stricter(.bareCROrLFBetweenRequests))
            default: break
            }
        }

        mutating func lineEnd() -> String {
            chance(0.985) ? "\r\n" : pick(["\n", "\r", "\r\r\n", "\n\r"])
        }

        static let methods = ["GET", "GET", "GET", "POST", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "QUERY", "PROPFIND", "M-SEARCH", "PURGE"]
        static let badMethods = ["get", "Post", "FOO", "GETT", "PRI", "DESCRIBE", "", "G\u{0}T", "GE T", "M_SEARCH"]
        static let pathBytes = Array("abcxyzABC019-._~!$&'()*+,;=:@%/?#\"<>[]\\^`{|}".utf8)

        /// Writes one request (and tags the next with what this one makes of it).
        mutating func appendRequest(to request: inout GeneratedRequest, isLast: Bool, tagsForNext: inout Set<Tag>) {
            tagsOfThisRequest = []
            // Request line.
            let methodRoll = int(0...99)
            let isConnect = (88..<91).contains(methodRoll)
            request.append(methodRoll < 88 ? pick(Self.methods) : isConnect ? "CONNECT" : pick(Self.badMethods))
            request.append(separator(&request))
            request.append(target(isConnect: isConnect))
            request.append(separator(&request))
            var isHTTP10 = false
            switch int(0...99) {
            case 0..<82: request.append("HTTP/1.1")
            case 82..<94:
                request.append("HTTP/1.0")
                isHTTP10 = true
            case 94..<96:
                request.append("RTSP/1.0")
                request.tags.insert(.stricter(.rtspVersion))
                isHTTP10 = true
            default: request.append(pick(["HTTP/1.2", "HTTP/2.0", "HTTP/0.9", "http/1.1", "HTTP/1.1 ", "HTTP/1", "HTTP/1.10", "HTTP/1.1\t"]))
            }
            request.append(lineEnd())

            // Fields, framing among them at a random place.
            var fields: [[UInt8]] = []
            if chance(0.9) { fields.append(Array("Host: a".utf8)) }
            for _ in 0..<pick([0, 0, 1, 1, 2, 3]) { fields.append(randomField()) }

            var switches = isConnect
            var upgradeWithoutConnectionUpgrade = false
            if chance(0.05) {
                fields.append(Array("Upgrade: websocket".utf8))
                switches = true
                if chance(0.5) {
                    fields.append(Array("Connection: upgrade".utf8))
                } else {
                    upgradeWithoutConnectionUpgrade = true
                }
            } else if chance(0.15) {
                let (name, value, closesForGatehouseOnly) = connectionField(isHTTP10: isHTTP10)
                fields.append(Array("\(name): \(value)".utf8))
                if closesForGatehouseOnly { tagsForNext.insert(.stricter(.bytesAfterAClosingRequest)) }
                if isHTTP10 && value == "keep-alive\t" { tagsForNext.insert(.knownLaxity(.keepAliveThenTabOnHTTP10)) }
            }

            var body: [UInt8] = []
            var hasBody = false
            switch int(0...99) {
            case 0..<35: break
            case 35..<65:
                let (field, bodyBytes) = contentLengthFraming(&request, isLast: isLast)
                fields.insert(field, at: int(0...fields.count))
                body = bodyBytes
                hasBody = true
            case 65..<94:
                let (teFields, isChunked) = transferEncodingFraming(&request, isHTTP10: isHTTP10)
                for field in teFields { fields.insert(field, at: int(0...fields.count)) }
                if isChunked || chance(0.5) { body = chunkedBody(isLast: isLast) }
                hasBody = true
            case 94..<97:
                let (field, bodyBytes) = contentLengthFraming(&request, isLast: isLast)
                fields.insert(field, at: int(0...fields.count))
                fields.insert(Array("Transfer-Encoding: chunked".utf8), at: int(0...fields.count))
                body = chance(0.5) ? bodyBytes : chunkedBody(isLast: isLast)
            default:
                let length = int(0...9)
                fields.insert(Array("Content-Length: \(length)".utf8), at: int(0...fields.count))
                fields.insert(Array("Content-Length: \(chance(0.5) ? length : length + 1)".utf8), at: int(0...fields.count))
                body = (0..<length).map { _ in bodyByte() }
            }
            for field in fields {
                request.append(field)
                request.append(lineEnd())
            }
            request.append(lineEnd())
            request.append(body)

            if switches {
                request.tags.insert(.switchesProtocols)
                if upgradeWithoutConnectionUpgrade { request.tags.insert(.differs(.upgradeWithoutConnectionUpgrade)) }
                if hasBody { request.tags.insert(.stricter(.bodyBeforeProtocolSwitch)) }
            }
            request.tags.formUnion(tagsOfThisRequest)
            if closeInTrailers { tagsForNext.insert(.knownLaxity(.closeInTrailers)) }
            closeInTrailers = false
        }

        mutating func separator(_ request: inout GeneratedRequest) -> String {
            switch int(0...99) {
            case 0..<95: return " "
            case 95..<98:
                request.tags.insert(.stricter(.extraSpaceInRequestLine))
                return "  "
            default: return pick(["\t", " \t", "\u{B}"])
            }
        }

        static let authorityBytes = Array("abcz019.-_~:@[]%!$&'()*+,;=".utf8)
        static let oddVisibleBytes = Array("\"{}<>|\\^`#/?".utf8)

        static func isAuthorityByte(_ byte: UInt8) -> Bool { authorityBytes.contains(byte) || (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }

        mutating func target(isConnect: Bool) -> [UInt8] {
            if isConnect {
                let target = pick(["a:443", "a.test:80", "[::1]:443", "a", "u@a:1", "*", "/x", "a/b", "?", "http://a/", "{}", "a:443/", "a@@b"])
                if target.contains("@@") { tagsOfThisRequest.insert(.knownLaxity(.doubleAtInAuthority)) }
                if !target.utf8.allSatisfy(Self.isAuthorityByte) && target != "{}" {  // llhttp refuses "{}" too
                    tagsOfThisRequest.insert(.stricter(.targetFormLLHTTPTolerates))
                }
                return Array(target.utf8)
            }
            switch int(0...99) {
            case 0..<64: return [UInt8(ascii: "/")] + (0..<int(0...12)).map { _ in pick(Self.pathBytes) }
            case 64..<70:
                let target = pick(["*", "*", "*x", "**", "*?a", "*/a"])
                if target != "*" { tagsOfThisRequest.insert(.stricter(.targetFormLLHTTPTolerates)) }
                return Array(target.utf8)
            case 70..<86:
                // Absolute-form, or nearly.
                var target = Array((pick(["http", "http", "https", "HTTP", "ws", "h", "h1", "", "1a"]) + pick(["://", "://", "://", ":/", ":"])).utf8)
                var authority: [UInt8] = []
                for _ in 0..<int(0...8) { authority.append(chance(0.9) ? pick(Self.authorityBytes) : pick(Self.oddVisibleBytes)) }
                let end = authority.firstIndex { Self.oddVisibleBytes.contains($0) } ?? authority.count
                if authority[..<end].indices.dropLast().contains(where: { authority[$0] == UInt8(ascii: "@") && authority[$0 + 1] == UInt8(ascii: "@") }) {
                    tagsOfThisRequest.insert(.knownLaxity(.doubleAtInAuthority))
                }
                target += authority
                target += Array(pick(["", "/", "/p?q", "?q", "#f", "/#f"]).utf8)
                return target
            case 86..<95:
                // A byte no target may hold.
                var path = Array("/ab".utf8)
                path.insert(pick([0x00, 0x01, 0x09, 0x0B, 0x7F, 0x80, 0xC3, 0xFF, 0x0D, 0x0A]), at: int(1...path.count))
                return path
            default:
                // Visible ASCII, but no request target.
                return Array(pick(["a", "?a", "#a", "1/a", "a:b", "-", "%2F"]).utf8)
            }
        }

        static let fieldNames = ["X-A", "Accept", "User-Agent", "X-Forwarded-For", "Cookie", "X_Under", "Cache-Control", "a",
                                 "!#$%&'*+-.^_`|~", "Transfer_Encoding", "Content_Length"]
        static let badFieldNames = ["X A", "X-A ", "", "X\u{0}A", "X\u{80}A", " X-A", "\tX-A", "X(A", "X\tA", "X\"A"]
        static let valueBytes = Array("abcXYZ019 -_.,;:=/\"()<>?@[]{}".utf8)
        static let oddValueBytes: [UInt8] = [0x00, 0x01, 0x0B, 0x0C, 0x1B, 0x7F, 0x80, 0xC3, 0xFF, 0x09, 0x0D, 0x0A]

        mutating func randomField() -> [UInt8] {
            var field = Array((chance(0.9) ? pick(Self.fieldNames) : pick(Self.badFieldNames)).utf8)
            field += Array((":" + pick(["", " ", " ", "  ", "\t", " \t"])).utf8)
            var value = (0..<int(0...12)).map { _ in pick(Self.valueBytes) }
            if chance(0.15) {
                let odd = pick(Self.oddValueBytes)
                if odd >= 0x80 { tagsOfThisRequest.insert(.stricter(.fieldValueNotUTF8)) }
                value.insert(odd, at: int(0...value.count))
            } else if chance(0.05) {
                value.insert(contentsOf: pick([[0xC3, 0xA9], [0xE2, 0x80, 0xAE], [0xF0, 0x9F, 0x94, 0x90]]), at: int(0...value.count))  // UTF-8: kept
            }
            return field + value + Array(pick(["", "", "", " ", "\t", " \t "]).utf8)
        }

        /// A Connection (or Proxy-Connection) field, and whether it closes the connection for Gatehouse but not
        /// for llhttp. (HTTP/1.0 without keep-alive closes it for both.)
        mutating func connectionField(isHTTP10: Bool) -> (name: String, value: String, closesForGatehouseOnly: Bool) {
            switch int(0...9) {
            case 0...2: return ("Connection", "close", false)
            case 3: return ("Connection", "x, Close", false)
            case 4: return ("Connection", pick(["keep-alive", "Keep-Alive"]), false)
            case 5: return ("Connection", "close\t", !isHTTP10)
            case 6: return ("Connection", "keep-alive, close", isHTTP10)
            // llhttp closes on this and Gatehouse does not (the corpus has it).
            case 7: return ("Connection", "keep-alive\t", false)
            case 8: return ("Proxy-Connection", "close", false)
            default: return ("Connection", "upgrade", false)
            }
        }

        /// A Content-Length field and a body: usually the length of the body, sometimes formatted oddly, and in
        /// the last request sometimes wrong.
        mutating func contentLengthFraming(_ request: inout GeneratedRequest, isLast: Bool) -> (field: [UInt8], body: [UInt8]) {
            let length = int(0...24)
            let digits = String(length)
            let value: String
            switch int(0...99) {
            case 0..<78: value = digits
            case 78..<84: value = pick([" \(digits)", "\(digits) ", "\t\(digits)", " \(digits)  ", "00\(digits)"])
            case 84..<86:
                value = "\(digits)\t"
                request.tags.insert(.knownLaxity(.contentLengthThenTab))
            case 86..<90:
                value = String(repeating: "0", count: int(19...22) - digits.count) + digits
                request.tags.insert(.stricter(.contentLengthOver18Digits))
            default: value = pick(["+\(digits)", "-1", "\(digits), \(digits)", "", "0x\(digits)", "\(digits) \(digits)", "\(digits).0", "\(digits)\u{B}"])
            }
            let name = chance(0.95) ? "Content-Length" : pick(["content-length", "CONTENT-LENGTH"])
            var bodyLength = length
            if isLast && chance(0.05) { bodyLength = max(0, length + pick([-2, -1, 1, 3])) }
            if bodyLength > length { bodyLongerThanItsLength = true }
            return (Array("\(name):\(pick([" ", "", " "]))\(value)".utf8), (0..<bodyLength).map { _ in bodyByte() })
        }

        /// Transfer-Encoding fields, and whether llhttp reads the body as chunked.
        mutating func transferEncodingFraming(_ request: inout GeneratedRequest, isHTTP10: Bool) -> (fields: [[UInt8]], chunked: Bool) {
            if isHTTP10 { request.tags.insert(.stricter(.transferEncodingOnHTTP10)) }
            let value: String
            var chunked = true
            switch int(0...99) {
            case 0..<70: value = "chunked"
            case 70..<78: value = pick(["Chunked", "CHUNKED", " chunked ", "\tchunked", "chunked "])
            case 78..<80:
                // llhttp does not read a tab after the coding as OWS: it is no 'chunked' to llhttp.
                value = "chunked\t"
                request.tags.insert(.knownLaxity(.chunkedThenTab))
                request.tags.insert(.stricter(.transferCodingOtherThanChunked))
            case 80..<90:
                value = pick(["gzip, chunked", "identity, chunked", "x,chunked", ",chunked", ""])
                chunked = !value.isEmpty
                request.tags.insert(.stricter(.transferCodingOtherThanChunked))
            case 90..<96:
                // llhttp refuses these too, except after an Upgrade head, whose body it never reads.
                value = pick(["chunked, chunked", "chunked, gzip", "gzip", "identity", "xchunked", "chunked;q=1", "chunked\u{B}"])
                chunked = false
                request.tags.insert(.stricter(.transferCodingOtherThanChunked))
            default:
                request.tags.insert(.stricter(.transferCodingOtherThanChunked))
                let pair = pick([("gzip", "chunked"), ("chunked", "chunked"), ("identity", "chunked")])
                return ([Array("Transfer-Encoding: \(pair.0)".utf8), Array("Transfer-Encoding: \(pair.1)".utf8)], true)
            }
            let name = chance(0.95) ? "Transfer-Encoding" : pick(["transfer-encoding", "TRANSFER-ENCODING"])
            return ([Array("\(name):\(value.hasPrefix(" ") || value.hasPrefix("\t") ? "" : " ")\(value)".utf8)], chunked)
        }

        static let validExtensions = [";a", ";a=b", ";a=\"b c\"", ";a=\"\\\"\"", ";a;b=c", ";name=\"\"", ";x-y=1.2"]
        static let toleratedExtensions = [";a=", ";;a", ";=b", ";a=;b"]
        static let badExtensions = [" ;a", "; a", ";a =b", ";a= b", ";", ";a=b c", ";a=\"b", ";a=\"b\"c", "\t", " ", ";a=b;"]

        /// Chunks, the last chunk and trailers: mostly well formed.
        mutating func chunkedBody(isLast: Bool) -> [UInt8] {
            var body: [UInt8] = []
            for _ in 0..<pick([0, 1, 1, 2, 3]) {
                let size = int(1...20)
                var sizeText = String(size, radix: 16, uppercase: chance(0.2))
                switch int(0...99) {
                case 0..<8: sizeText = String(repeating: "0", count: int(1...3)) + sizeText
                case 8..<10: sizeText = String(repeating: "0", count: int(16...18) - sizeText.count) + sizeText
                default: break
                }
                body += Array(sizeText.utf8)
                if sizeText.count > 15 { tagsOfThisRequest.insert(.stricter(.chunkSizeOver15HexDigits)) }
                body += chunkExtension()
                body += Array(lineEnd().utf8)
                let dataLength = isLast && chance(0.03) ? size + pick([-1, 1]) : size
                body += (0..<dataLength).map { _ in bodyByte() }
                body += Array((chance(0.97) ? "\r\n" : pick(["\n", "", "\r", "XX", "\r\r\n"])).utf8)
            }
            body += Array(pick(["0", "0", "0", "0", "00", "000", "0;a=b"]).utf8)
            body += Array(lineEnd().utf8)
            for _ in 0..<pick([0, 0, 0, 1, 2]) {
                body += Array(trailerField().utf8)
                body += Array(lineEnd().utf8)
            }
            body += Array(lineEnd().utf8)
            return body
        }

        /// Tags found while writing a body, collected by `appendRequest`.
        var tagsOfThisRequest: Set<Tag> = []
        var bodyLongerThanItsLength = false
        var closeInTrailers = false

        mutating func chunkExtension() -> [UInt8] {
            switch int(0...99) {
            case 0..<80: return []
            case 80..<90: return Array(pick(Self.validExtensions).utf8)
            case 90..<95:
                tagsOfThisRequest.insert(.stricter(.chunkExtensionWithoutNameOrValue))
                return Array(pick(Self.toleratedExtensions).utf8)
            default: return Array(pick(Self.badExtensions).utf8)
            }
        }

        mutating func trailerField() -> String {
            switch int(0...99) {
            case 0..<80: return pick(["X-T: 1", "X-Checksum:  abc ", "Y:", "Server-Timing: a;dur=1"])
            case 80..<96: return pick(["X-T : 1", " X: 1", "X:\u{0}", "X\u{7F}: 1", ": v", "NoColon"])
            // llhttp refuses framing in trailers and closes after Connection: close there (the corpus documents them).
            default:
                let field = pick(["Content-Length: 5", "Transfer-Encoding: chunked", "Connection: close"])
                if field.hasPrefix("Connection") {
                    closeInTrailers = true
                } else {
                    tagsOfThisRequest.insert(.knownLaxity(.framingFieldInTrailers))
                }
                return field
            }
        }

        mutating func bodyByte() -> UInt8 {
            chance(0.8) ? pick(Array("abcdefghij0123456789 \r\n".utf8)) : UInt8.random(in: 0...255, using: &random)
        }
    }
}

