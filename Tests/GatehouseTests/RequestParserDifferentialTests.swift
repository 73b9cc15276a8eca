import Testing

@testable import Gatehouse

/// Differential test: generated requests, valid and broken in the ways smugglers break them, go
/// through Gatehouse's parser and through llhttp (NIO's decoder, kept as a test-only oracle), split
/// into random reads. Whatever Gatehouse accepts, llhttp must accept and frame identically (the
/// same requests, fields, bodies and trailers); Gatehouse may refuse what llhttp accepts only for
/// the documented reasons below; llhttp refusing what Gatehouse accepts fails the test.
struct RequestParserDifferentialTests {
    /// Where Gatehouse is deliberately stricter than llhttp (docs/reference.md §4.9).
    enum Stricter: String, CaseIterable {
        case transferCodingOtherThanChunked = "a Transfer-Encoding other than exactly chunked (the coding would be lost in re-framing)"
        case transferEncodingOnHTTP10 = "Transfer-Encoding on HTTP/1.0 (RFC 9112 §6.1: faulty framing)"
        case extraSpaceInRequestLine = "more than one space between request-line parts"
        case chunkExtensionWithoutValue = "a chunk extension with '=' and no value"
    }

    /// One generated input: its bytes, and the stricter classes it touches.
    struct Generated {
        var bytes: [UInt8] = []
        var stricter: Set<Stricter> = []
    }

    static let requestCount = 20000

    @Test func gatehouseNeverAcceptsWhatLLHTTPRefusesAndFramesAcceptedRequestsIdentically() {
        var random = SplitMix64(seed: 0x6761_7465_686F_7573)
        var outcomes: [String: Int] = [:]
        for index in 0..<Self.requestCount {
            let input = Self.generateInput(&random)
            let pieces = Self.randomSplit(input.bytes, &random)
            let gatehouse = RequestFraming.frame(pieces, with: .gatehouse)
            let llhttp = RequestFraming.frame([input.bytes], with: .llhttp)
            let context = "input \(index): \(String(decoding: input.bytes, as: UTF8.self).debugDescription)"
            switch (gatehouse.refusal, llhttp.refusal) {
            case (nil, nil):
                outcomes["both accept", default: 0] += 1
                #expect(gatehouse == llhttp, "\(context)\ngatehouse \(gatehouse)\nllhttp \(llhttp)")
            case (nil, .some):
                Issue.record("Gatehouse accepts what llhttp refuses: \(context)\ngatehouse \(gatehouse)")
            case (.some, .some):
                outcomes["both refuse", default: 0] += 1
                if input.stricter.isEmpty {  // else Gatehouse may have refused an earlier request
                    #expect(gatehouse.requests == llhttp.requests, "requests before the refusal: \(context)")
                }
            case (.some, nil):
                outcomes["gatehouse stricter", default: 0] += 1
                #expect(!input.stricter.isEmpty, "refused without a documented reason: \(context)\nllhttp \(llhttp)")
                for reason in input.stricter { outcomes["gatehouse stricter: \(reason)", default: 0] += 1 }
            }
        }
        print("differential outcomes over \(Self.requestCount) inputs: \(outcomes.sorted { $0.key < $1.key })")
        #expect(outcomes["both accept", default: 0] > Self.requestCount / 5, "the generator makes enough valid requests")
        #expect(outcomes["both refuse", default: 0] > Self.requestCount / 5, "the generator makes enough broken requests")
        for reason in Stricter.allCases {
            #expect(outcomes["gatehouse stricter: \(reason)", default: 0] > 0, "the generator exercises \(reason)")
        }
    }

    // MARK: - Generator

    static func generateInput(_ random: inout SplitMix64) -> Generated {
        var input = Generated()
        for _ in 0..<(1 + random.below(3)) { appendRequest(to: &input, &random) }
        return input
    }

    /// Each piece comes from a pool of valid choices, or (1 in 25) from one of broken ones, so
    /// that a good share of inputs is valid throughout and the rest broken in one or two places.
    struct Pool<Element: Sendable>: Sendable {
        let valid: [Element]
        let broken: [Element]

        func pick(_ random: inout SplitMix64) -> Element {
            random.below(25) == 0 ? broken[random.below(broken.count)] : valid[random.below(valid.count)]
        }
    }

    static let methods = Pool(valid: ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "M-SEARCH"], broken: ["get", "FOO", "G\u{0}T"])
    static let targets = Pool(valid: ["/", "/a/b?c=d", "http://h/x", "/%00", "/a#f"], broken: ["/a b", "/a\u{7F}", "/\u{1}"])
    static let versions = Pool(valid: ["HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0"], broken: ["HTTP/1.2", "HTTP/2.0", "http/1.1"])
    static let names = Pool(valid: ["X-A", "x_b", "Accept", "Connection", "Upgrade-Insecure-Requests"], broken: ["Te st", "X-C ", "", "X\u{1}"])
    static let valueBytes = Pool<UInt8>(valid: [0x61, 0x7A, 0x20, 0x09, 0x2C, 0x3B, 0x22, 0x80, 0xFF], broken: [0x00, 0x0B, 0x7F, 0x0D, 0x0A])

    static func appendRequest(to input: inout Generated, _ random: inout SplitMix64) {
        let version = versions.pick(&random)
        let separator = random.below(40) == 0 ? "  " : " "
        if separator != " " { input.stricter.insert(.extraSpaceInRequestLine) }
        var head = methods.pick(&random) + separator + targets.pick(&random) + " " + version
        var lines: [String] = []
        if random.below(10) != 0 { lines.append("Host: a") }
        for _ in 0..<random.below(4) {
            let value = String(decoding: (0..<random.below(6)).map { _ in random.below(4) == 0 ? valueBytes.pick(&random) : 0x61 }, as: UTF8.self)
            lines.append(names.pick(&random) + ":" + (random.below(2) == 0 ? " " : "") + value)
        }
        let body = framing(&random, version: version, lines: &lines, stricter: &input.stricter)
        if random.below(50) == 0, !lines.isEmpty { lines.append(" folded") }
        head += "\r\n" + lines.map { $0 + lineEnd(&random) }.joined() + "\r\n"
        input.bytes += Array(head.utf8) + body
    }

    /// Mostly CRLF; now and then a bare LF or CR.
    static func lineEnd(_ random: inout SplitMix64) -> String {
        switch random.below(150) {
        case 0: "\n"
        case 1: "\r"
        default: "\r\n"
        }
    }

    /// Adds framing fields (valid or not) and returns the body bytes that go with them.
    static func framing(_ random: inout SplitMix64, version: String, lines: inout [String], stricter: inout Set<Stricter>) -> [UInt8] {
        let size = random.below(12)
        switch random.below(8) {
        case 0, 1:
            return []
        case 2, 3:
            let lengths = Pool(valid: ["\(size)", " \(size)"], broken: ["+\(size)", "\(size), \(size)", "-1", "0x1", "99999999999999999999"])
            lines.append("Content-Length: " + lengths.pick(&random))
            if random.below(25) == 0 { lines.append("Content-Length: \(size)") }
            return Array(repeating: UInt8(ascii: "b"), count: size)
        default:
            let codings = Pool(valid: ["chunked", "Chunked"], broken: ["gzip, chunked", "chunked, gzip", "xchunked", "chunked;", "identity"])
            let coding = codings.pick(&random)
            if coding.lowercased() != "chunked" { stricter.insert(.transferCodingOtherThanChunked) }
            if version == "HTTP/1.0" { stricter.insert(.transferEncodingOnHTTP10) }
            lines.append("Transfer-Encoding: " + coding)
            if random.below(25) == 0 { lines.append("Content-Length: 3") }
            return chunkedBody(&random, stricter: &stricter)
        }
    }

    static func chunkedBody(_ random: inout SplitMix64, stricter: inout Set<Stricter>) -> [UInt8] {
        var body = ""
        for _ in 0..<random.below(3) {
            let size = 1 + random.below(20)
            let sizes = [String(size, radix: 16), String(size, radix: 16, uppercase: true), "0" + String(size, radix: 16)]
            let extensions = Pool(valid: ["", "", ";a", ";a=b", ";a=\"q r\""], broken: [" ;a", ";", ";a=", ";a=\"x"])
            let chunkExtension = extensions.pick(&random)
            if chunkExtension == ";a=" { stricter.insert(.chunkExtensionWithoutValue) }
            body += sizes[random.below(sizes.count)] + chunkExtension + lineEnd(&random)
            body += String(repeating: "c", count: size) + (random.below(50) == 0 ? "XX" : "\r\n")
        }
        body += "0\r\n"
        if random.below(4) == 0 { body += "X-Trailer: t" + lineEnd(&random) }
        return Array((body + "\r\n").utf8)
    }

    /// The bytes as a connection might read them: whole, or cut at up to three random places.
    static func randomSplit(_ bytes: [UInt8], _ random: inout SplitMix64) -> [[UInt8]] {
        guard bytes.count > 1 else { return [bytes] }
        let cuts = Set((0..<random.below(4)).map { _ in 1 + random.below(bytes.count - 1) }).sorted()
        var pieces: [[UInt8]] = []
        var start = 0
        for cut in cuts {
            pieces.append(Array(bytes[start..<cut]))
            start = cut
        }
        pieces.append(Array(bytes[start...]))
        return pieces
    }
}

/// A small deterministic generator (SplitMix64), so every run tests the same inputs.
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform enough in 0..<bound for a test generator.
    mutating func below(_ bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }
}
