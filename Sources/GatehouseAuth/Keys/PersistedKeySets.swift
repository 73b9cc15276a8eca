import Foundation

/// `[jwks] cache_dir`: the last good JWKS of each provider on disk, so a restart during an IdP
/// outage keeps serving. One file per provider, `<name>.jwks`: a first line
/// `gatehouse-jwks 1 <unix seconds of the fetch>`, then the JWKS document exactly as fetched.
/// Written to a temporary file and renamed, so a reader never sees half a file.
struct PersistedKeySets: Sendable {
    let directory: String

    init(directory: String) {
        self.directory = directory
    }

    struct Loaded {
        var body: [UInt8]
        var fetchedAt: Date
    }

    struct SaveError: Error, CustomStringConvertible {
        var description: String
    }

    private static let magic = "gatehouse-jwks 1 "

    func save(provider: String, body: [UInt8], fetchedAt: Date) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = file(for: provider)
        let temporary = path + ".tmp-\(getpid())"
        var contents = Array((Self.magic + String(Int64(fetchedAt.timeIntervalSince1970)) + "\n").utf8)
        contents.append(contentsOf: body)
        guard FileManager.default.createFile(atPath: temporary, contents: Data(contents), attributes: [.posixPermissions: 0o600]) else {
            throw SaveError(description: "cannot write \(temporary)")
        }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw SaveError(description: "cannot rename \(temporary): \(String(cString: strerror(errno)))")
        }
    }

    func load(provider: String) -> Loaded? {
        guard let data = FileManager.default.contents(atPath: file(for: provider)) else { return nil }
        let bytes = Array(data)
        guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")),
            let header = String(bytes: bytes[..<newline], encoding: .utf8), header.hasPrefix(Self.magic),
            let seconds = Int64(header.dropFirst(Self.magic.count))
        else { return nil }
        return Loaded(body: Array(bytes[(newline + 1)...]), fetchedAt: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    private func file(for provider: String) -> String {
        (directory as NSString).appendingPathComponent(provider + ".jwks")
    }
}
