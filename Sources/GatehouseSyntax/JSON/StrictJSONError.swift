/// Why `StrictJSON` refused a document, and the byte offset where it noticed.
public struct StrictJSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, e.g. `duplicate member name "alg"`.
    public let message: String
    /// Offset in bytes from the start of the document.
    public let offset: Int

    /// An error `message` noticed at byte `offset`.
    public init(_ message: String, offset: Int) {
        self.message = message
        self.offset = offset
    }

    /// `<message> at byte <offset>`.
    public var description: String { "\(message) at byte \(offset)" }
}
