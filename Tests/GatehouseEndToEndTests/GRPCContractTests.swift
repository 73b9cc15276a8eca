import Foundation
@testable import Gatehouse
import NIOHTTP1
import Testing
import GatehouseAuth
import GatehouseExchange
import GatehouseExtAuthz

/// docs/reference.md §6, "gRPC refusals": every local answer to a gRPC call is HTTP 200 with a
/// trailers-only response whose `grpc-status` and `grpc-message` follow the table — for the answers
/// that are not authentication failures too (504, 400, 404, 405, 413). Calls made with curl over
/// HTTP/2 prior knowledge, so the header block is read as it came off the wire.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct GRPCContractTests {
    struct Answer: CustomStringConvertible {
        var httpStatus: Int?
        var fields: [(String, String)]
        var bodyBytes: Int?
        func value(_ name: String) -> String? { fields.first { $0.0 == name }?.1 }
        var description: String { "HTTP \(httpStatus.map(String.init) ?? "none"), body \(bodyBytes.map(String.init) ?? "?") bytes, \(fields)" }
    }

    /// One gRPC-shaped POST (HTTP/2, `content-type: application/grpc`, `te: trailers`) with curl.
    static func call(port: Int, path: String, token: String? = nil, headers: [(String, String)] = [], bodyFile: String? = nil) async throws -> Answer {
        var arguments = [
            "/usr/bin/env", "curl", "-s", "-m", "10", "--http2-prior-knowledge", "-D", "-", "-o", "/dev/null", "-w", "\nsize_download=%{size_download}\n",
            "-X", "POST", "-H", "content-type: application/grpc", "-H", "te: trailers",
        ]
        if let token { arguments += ["-H", "authorization: Bearer \(token)"] }
        for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
        if let bodyFile { arguments += ["--data-binary", "@\(bodyFile)"] }
        arguments.append("http://127.0.0.1:\(port)\(path)")
        let output = try await PythonPeer.runCapturing(arguments, anyExit: true)
        var answer = Answer(httpStatus: nil, fields: [], bodyBytes: nil)
        for line in output.split(whereSeparator: \.isNewline).map({ $0.trimmingCharacters(in: .whitespacesAndNewlines) }) {
            if line.hasPrefix("HTTP/2 ") {
                answer.httpStatus = Int(line.dropFirst(7).prefix(3))
            } else if line.hasPrefix("size_download=") {
                answer.bodyBytes = Int(line.dropFirst("size_download=".count))
            } else if let colon = line.firstIndex(of: ":"), answer.httpStatus != nil {
                answer.fields.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
        }
        return answer
    }

    /// A trailers-only gRPC refusal: HTTP 200, `application/grpc`, the status and the message as given, a request id, no body.
    static func expectRefusal(_ answer: Answer, status: Int, message: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(answer.httpStatus == 200, "\(what): \(answer)", sourceLocation: sourceLocation)
        #expect(answer.value("content-type") == "application/grpc", "\(what): \(answer)", sourceLocation: sourceLocation)
        #expect(answer.value("grpc-status") == String(status), "\(what): \(answer)", sourceLocation: sourceLocation)
        #expect(answer.value("grpc-message") == message, "\(what): \(answer)", sourceLocation: sourceLocation)
        #expect(answer.value("x-request-id")?.isEmpty == false, "\(what): \(answer)", sourceLocation: sourceLocation)
        #expect(answer.bodyBytes == 0, "\(what): a trailers-only response has no body: \(answer)", sourceLocation: sourceLocation)
    }

    static func phrase(_ code: Int) -> String { "\(code) \(HTTPResponseStatus(statusCode: code).reasonPhrase)" }

    /// 504 → 4 `DEADLINE_EXCEEDED`; 400, 404, 405, 413 → 13 `INTERNAL` with `<code> <reason phrase>`. None of
    /// them is an authentication failure: the failure log stays empty.
    @Test func localAnswersThatAreNotAuthFailuresMapToTheirGRPCStatus() async throws {
        let directory = try Contract.makeDirectory("grpc")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bigBody = directory + "/body"
        try String(repeating: "r", count: 20 * 1024).write(toFile: bigBody, atomically: true, encoding: .utf8)
        try await TestEnvironment.run(upstreamHTTP2: true) { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid())
            // The HTTP/2 test upstream answers /slow after 2 s; [upstream] timeout is 800 ms here.
            let slow = try await Self.call(port: env.port, path: "/slow", token: token)
            Self.expectRefusal(slow, status: 4, message: "upstream_timeout: the upstream did not answer in time", "504")
            #expect(env.upstream.requests.map(\.uri) == ["/slow"], "the call reached the upstream")

            let badURI = try await Self.call(port: env.port, path: "/.gatehouse/check", headers: [("x-forwarded-uri", "/a%00b")])
            Self.expectRefusal(badURI, status: 13, message: Self.phrase(400), "400 check without a readable URI")
            let notFound = try await Self.call(port: env.port, path: "/.gatehouse/nope", token: token)
            Self.expectRefusal(notFound, status: 13, message: Self.phrase(404), "404")
            let wrongMethod = try await Self.call(port: env.port, path: "/.gatehouse/userinfo", token: token)
            Self.expectRefusal(wrongMethod, status: 13, message: Self.phrase(405), "405")
            let tooLarge = try await Self.call(port: env.port, path: "/.gatehouse/signout", token: token, bodyFile: bigBody)
            Self.expectRefusal(tooLarge, status: 13, message: Self.phrase(413), "413 sign-out body over 16 KiB")

            #expect(env.failureLog.isEmpty, "\(env.failureLogLines)")
            #expect(env.upstream.requestCount == 1)
            // The 413 did not sign the token out.
            #expect(try await Self.call(port: env.port, path: "/.gatehouse/nope", token: token).value("grpc-status") == "13")
            #expect(try await env.request("/v1/orders", token: token).status == 200)
        }
    }

    /// `grpc-message` is percent-encoded as gRPC specifies — bytes outside 0x20–0x7E, and `%`, as `%XX` — and
    /// nothing else: the messages on the wire keep their spaces, colons and dots as they are.
    @Test func grpcMessageIsPercentEncodedAsGRPCSpecifies() async throws {
        // Every message Gatehouse sends today is printable ASCII without `%`, so the encoding of the other
        // bytes is checked on the function that writes the field.
        #expect(GRPCRefusal.percentEncoded("caf\u{E9} 100% done\n\u{7F}~") == "caf%C3%A9 100%25 done%0A%7F~")
        #expect(GRPCRefusal.percentEncoded("expired: The access token expired.") == "expired: The access token expired.")
        try await TestEnvironment.run(upstreamHTTP2: true) { (env: TestEnvironment) async throws in
            let missing = try await Self.call(port: env.port, path: "/v1/orders")
            #expect(missing.value("grpc-status") == "16", "\(missing)")
            #expect(missing.value("grpc-message") == "missing_token: A bearer token is required.", "\(missing)")
            let notFound = try await Self.call(port: env.port, path: "/.gatehouse/nope")
            #expect(notFound.value("grpc-message") == "404 Not Found", "\(notFound)")
        }
    }
}
