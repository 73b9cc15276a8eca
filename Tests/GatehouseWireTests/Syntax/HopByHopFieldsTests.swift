import Foundation
import Testing
import GatehouseSyntax

/// The one hop-by-hop list every path reads (RFC 9110 §7.6.1, and `Proxy`/`Proxy-*`): found by its length first, so
/// every name is checked here against the list as written, in every spelling a client or upstream may use.
struct HopByHopFieldsTests {
    static let listed = ["connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "proxy"]

    /// The rule, written the slow way: a listed name, or `proxy-` and anything, lower-cased with `_` read as `-`.
    static func isHopByHop(_ name: String) -> Bool {
        let folded = String(name.lowercased().map { $0 == "_" ? "-" : $0 })
        return listed.contains(folded) || folded.hasPrefix("proxy-")
    }

    @Test func everySpellingOfEachAndNothingElse() {
        for name in ["Connection", "keep-alive", "Keep_Alive", "TE", "Trailer", "TRANSFER_ENCODING", "Upgrade", "Proxy", "proxy-authenticate",
                     "Proxy_Connection", "proxy-"] {
            #expect(HopByHopFields.contains(name.utf8), "\(name)")
        }
        for name in ["Connections", "keep-alive2", "tee", "trailers", "transfer-encodings", "proxyx", "prox", "x-proxy-agent", "Content-Length", ""] {
            #expect(!HopByHopFields.contains(name.utf8), "\(name)")
        }
    }

    @Test(arguments: [
        "Connection", "KEEP-ALIVE", "keep_alive", "TE", "te", "Trailer", "Transfer-Encoding", "transfer_encoding", "Upgrade",
        "Proxy", "proxy-", "proxy_", "Proxy-Authorization", "PROXY_CONNECTION", "proxy-a", "Proxy-Authenticate-Extra-Long-Name-Here",
    ])
    func listedNamesInAnySpellingAre(name: String) {
        #expect(HopByHopFields.contains(name.utf8))
    }

    @Test(arguments: [
        "", "t", "tee", "ta", "Proxyish", "proxies", "X-Proxy-Thing", "connectio", "connections",
        "keep-alivee", "trailers", "upgrades", "transfer-encodin", "content-length", "host", "Authorization", "proxyx-a",
    ])
    func otherNamesAreNot(name: String) {
        #expect(!HopByHopFields.contains(name.utf8))
        #expect(Self.isHopByHop(name) == false)
    }

    /// Every name of one to 20 bytes built from the letters the list uses (and `-`, `_`), sampled: the list's answer is
    /// the slow rule's.
    @Test func sampledNamesAgreeWithTheRuleWrittenSlowly() {
        let alphabet = Array("aceghiklnoprstuxyACEGKPRTU-_")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let length = Int.random(in: 1...20, using: &generator)
            let name = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })  // safe: not empty
            #expect(HopByHopFields.contains(name.utf8) == Self.isHopByHop(name), "\(name)")
        }
        for name in Self.listed {
            let spelled = [name, name.uppercased(), name.replacingOccurrences(of: "-", with: "_")]
            for spelling in spelled { #expect(HopByHopFields.contains(spelling.utf8), "\(spelling)") }
            #expect(HopByHopFields.contains(("proxy-" + name).utf8))
            #expect(!HopByHopFields.contains((name + "x").utf8))
        }
    }
}
