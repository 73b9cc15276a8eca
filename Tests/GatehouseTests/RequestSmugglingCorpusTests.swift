import Testing

@testable import Gatehouse

/// Request-smuggling corpus (docs/security.md P07-P12, P33, P48-P52): each case's bytes through
/// Gatehouse's parser, whole and split into two reads at every byte, against the expected
/// decision and framing; and through llhttp (NIO's decoder, the parser Gatehouse used before),
/// which must decide and frame the same, except where a case says why Gatehouse is stricter.
struct RequestSmugglingCorpusTests {
    enum Expected: Sendable {
        /// Framed as these requests: (method, body) each.
        case framed([(String, String)])
        /// These requests, then the bytes after them refused.
        case framedThenRefused([(String, String)])
        case refused
        case tooLarge
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let bytes: [UInt8]
        let expected: Expected
        /// Gatehouse refuses what llhttp accepts, and why.
        let stricterThanLLHTTP: String?

        init(_ name: String, _ text: String, _ expected: Expected, stricterThanLLHTTP: String? = nil) {
            self.name = name
            self.bytes = Array(text.utf8)
            self.expected = expected
            self.stricterThanLLHTTP = stricterThanLLHTTP
        }

        var testDescription: String { name }
    }

    static let host = "Host: a\r\n"

    static let cases: [Case] = [
        // Plain framing.
        Case("GET without body", "GET / HTTP/1.1\r\n\(host)\r\n", .framed([("GET", "")])),
        Case("Content-Length body", "POST / HTTP/1.1\r\n\(host)Content-Length: 5\r\n\r\nhello", .framed([("POST", "hello")])),
        Case("Content-Length with OWS", "POST / HTTP/1.1\r\n\(host)Content-Length: \t5 \r\n\r\nhello", .framed([("POST", "hello")])),
        Case("chunked body with trailers", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1;q=\"a b\"\r\n world\r\n0\r\nX-T: 1\r\n\r\n",
             .framed([("POST", "hello world")])),
        Case("CHUNKED in upper case", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: CHUNKED\r\n\r\n1\r\na\r\n0\r\n\r\n", .framed([("POST", "a")])),
        Case("empty lines before the request line", "\r\n\r\nGET / HTTP/1.1\r\n\(host)\r\n", .framed([("GET", "")])),
        Case("absolute-form target (the handler refuses it)", "GET http://a/b HTTP/1.1\r\n\(host)\r\n", .framed([("GET", "")])),
        Case("three pipelined requests", "GET /1 HTTP/1.1\r\n\(host)\r\nPOST /2 HTTP/1.1\r\n\(host)Content-Length: 3\r\n\r\nabcPUT /3 HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\nT: v\r\n\r\n",
             .framed([("GET", ""), ("POST", "abc"), ("PUT", "xy")])),
        Case("a request after HTTP/1.0 without keep-alive", "GET /1 HTTP/1.0\r\n\r\nGET /2 HTTP/1.1\r\n\(host)\r\n", .framedThenRefused([("GET", "")])),
        Case("a request after Connection: close", "GET /1 HTTP/1.1\r\n\(host)Connection: close\r\n\r\nGET /2 HTTP/1.1\r\n\(host)\r\n",
             .framedThenRefused([("GET", "")])),
        Case("a request after HTTP/1.0 with keep-alive", "GET /1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /2 HTTP/1.0\r\n\r\n",
             .framed([("GET", ""), ("GET", "")])),
        // CL.TE, TE.CL and TE obfuscations.
        Case("CL.TE", "POST / HTTP/1.1\r\n\(host)Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG", .refused),
        Case("TE.CL", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n", .refused),
        Case("space before the colon", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n", .refused),
        Case("xchunked", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", .refused),
        Case("chunked, chunked", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", .refused),
        Case("two Transfer-Encoding fields", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", .refused),
        Case("gzip, chunked", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", .refused,
             stricterThanLLHTTP: "only exactly 'chunked': Gatehouse re-frames bodies and would lose the coding"),
        Case("Transfer_Encoding is not framing", "POST / HTTP/1.1\r\n\(host)Transfer_Encoding: chunked\r\nContent-Length: 1\r\n\r\nx", .framed([("POST", "x")])),
        Case("chunked with a vertical tab", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\u{0B}\r\n\r\n0\r\n\r\n", .refused),
        Case("chunked folded onto the next line", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", .refused),
        Case("Transfer-Encoding on HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", .refused,
             stricterThanLLHTTP: "RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 message means faulty framing"),
        // Content-Length.
        Case("two equal Content-Lengths", "POST / HTTP/1.1\r\n\(host)Content-Length: 1\r\nContent-Length: 1\r\n\r\nx", .refused),
        Case("two different Content-Lengths", "POST / HTTP/1.1\r\n\(host)Content-Length: 1\r\nContent-Length: 2\r\n\r\nxy", .refused),
        Case("comma-list Content-Length", "POST / HTTP/1.1\r\n\(host)Content-Length: 1, 1\r\n\r\nx", .refused),
        Case("signed Content-Length", "POST / HTTP/1.1\r\n\(host)Content-Length: +1\r\n\r\nx", .refused),
        Case("negative Content-Length", "POST / HTTP/1.1\r\n\(host)Content-Length: -1\r\n\r\n", .refused),
        Case("overflowing Content-Length", "POST / HTTP/1.1\r\n\(host)Content-Length: 99999999999999999999999\r\n\r\n", .refused),
        // Chunk lines.
        Case("chunk size overflow", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", .refused),
        Case("chunk size with 0x", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n0x1\r\na\r\n0\r\n\r\n", .refused),
        Case("chunk size with a leading space", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n 1\r\na\r\n0\r\n\r\n", .refused),
        Case("chunk extension without a name", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n1;\r\na\r\n0\r\n\r\n", .refused),
        Case("chunk extension with whitespace", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n1 ;a=b\r\na\r\n0\r\n\r\n", .refused),
        Case("no CRLF after chunk data", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n1\r\naXX0\r\n\r\n", .refused),
        Case("bare LF after a chunk size", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n1\na\r\n0\r\n\r\n", .refused),
        Case("bare LF in the trailers", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n0\r\nT: v\n\r\n", .refused),
        // Line endings, folding, control bytes.
        Case("bare LF line endings", "GET / HTTP/1.1\nHost: a\n\n", .refused),
        Case("bare CR in the request line", "GET / HTTP/1.1\rHost: a\r\n\r\n", .refused),
        Case("bare CR in a field", "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", .refused),
        Case("obs-fold", "GET / HTTP/1.1\r\n\(host)X-A: 1\r\n 2\r\n\r\n", .refused),
        Case("NUL in a value", "GET / HTTP/1.1\r\n\(host)X-A: a\u{0}b\r\n\r\n", .refused),
        Case("ESC in a value", "GET / HTTP/1.1\r\n\(host)X-A: a\u{1B}b\r\n\r\n", .refused),
        Case("DEL in a value", "GET / HTTP/1.1\r\n\(host)X-A: a\u{7F}b\r\n\r\n", .refused),
        Case("NUL in a name", "GET / HTTP/1.1\r\n\(host)X\u{0}A: b\r\n\r\n", .refused),
        Case("control byte in the target", "GET /a\u{1}b HTTP/1.1\r\n\(host)\r\n", .refused),
        Case("space in the target", "GET /a b HTTP/1.1\r\n\(host)\r\n", .refused),
        // Request line.
        Case("HTTP/0.9", "GET /\r\n\r\n", .refused),
        Case("HTTP/1.2", "GET / HTTP/1.2\r\n\(host)\r\n", .refused),
        Case("HTTP/2.0 in a request line", "GET / HTTP/2.0\r\n\(host)\r\n", .refused),
        Case("lower-case method", "get / HTTP/1.1\r\n\(host)\r\n", .refused),
        Case("unknown method", "FOO / HTTP/1.1\r\n\(host)\r\n", .refused),
        Case("two spaces after the method", "GET  / HTTP/1.1\r\n\(host)\r\n", .refused,
             stricterThanLLHTTP: "single spaces in the request line (RFC 9112 §3): a parser that splits on runs of spaces reads another target"),
        // Size.
        Case("oversized request line", "GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\n\(host)\r\n", .tooLarge),
        Case("oversized field", "GET / HTTP/1.1\r\n\(host)X-A: " + String(repeating: "a", count: 9000) + "\r\n\r\n", .tooLarge),
    ]

    @Test(arguments: cases)
    func gatehouseDecidesAndFramesAsExpected(_ corpusCase: Case) {
        let whole = RequestFraming.frame([corpusCase.bytes], with: .gatehouse)
        switch corpusCase.expected {
        case .framed(let requests):
            #expect(whole.refusal == nil, "\(whole)")
            #expect(whole.requests.map(\.method) == requests.map(\.0))
            #expect(whole.requests.map { String(decoding: $0.body, as: UTF8.self) } == requests.map(\.1))
        case .framedThenRefused(let requests):
            #expect(whole.refusal == .badRequest, "\(whole)")
            #expect(whole.requests.map(\.method) == requests.map(\.0))
        case .refused:
            #expect(whole.refusal == .badRequest, "\(whole)")
        case .tooLarge:
            #expect(whole.refusal == .tooLarge, "\(whole)")
        }
    }

    /// However the bytes arrive, the same requests and the same decision (a connection's reads can
    /// split anywhere; a parser that decided differently at a boundary could be steered by it).
    @Test(arguments: cases.filter { $0.bytes.count < 1024 })
    func splittingTheBytesAnywhereChangesNothing(_ corpusCase: Case) {
        let whole = RequestFraming.frame([corpusCase.bytes], with: .gatehouse)
        for index in 1..<corpusCase.bytes.count {
            let split = RequestFraming.frame(RequestFraming.split(corpusCase.bytes, at: index), with: .gatehouse)
            #expect(split == whole, "split at \(index)")
            if split != whole { break }
        }
        let bytewise = RequestFraming.frame(corpusCase.bytes.map { [$0] }, with: .gatehouse)
        #expect(bytewise == whole, "one byte per read")
    }

    @Test(arguments: cases)
    func llhttpAgreesExceptWhereGatehouseIsStricter(_ corpusCase: Case) {
        let gatehouse = RequestFraming.frame([corpusCase.bytes], with: .gatehouse)
        let llhttp = RequestFraming.frame([corpusCase.bytes], with: .llhttp)
        if let reason = corpusCase.stricterThanLLHTTP {
            #expect(gatehouse.refusal != nil && llhttp.refusal == nil, "documented as stricter (\(reason)): llhttp \(llhttp)")
        } else {
            #expect(gatehouse == llhttp, "llhttp: \(llhttp)")
        }
    }
}
