/// The rule for field-value bytes above 0x7F (RFC 9110 §5.5 obs-text), one for both front doors
/// (docs/reference.md §4.9): a value is forwarded byte for byte when those bytes are well-formed UTF-8,
/// and refused (400) otherwise. Gatehouse's fields are Swift strings, which cannot hold other bytes, and
/// the HTTP/2 door decodes each field into one (`String(decoding:)`), which turns them into U+FFFD; so
/// U+FFFD itself is refused too (on HTTP/2 a sent U+FFFD and a replaced byte cannot be told apart), on
/// both doors alike.
/// Nothing is ever forwarded changed.
public enum FieldValueUTF8 {
    /// Whether the value's bytes are well-formed UTF-8 (no overlong forms, surrogates or bytes past
    /// U+10FFFF) without U+FFFD. Called only for a value that has a byte above 0x7F.
    @inlinable public static func isAccepted<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        var iterator = bytes.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                if Unicode.UTF8.decode(encoded) == replacementCharacter { return false }
            case .emptyInput:
                return true
            case .error:
                return false
            }
        }
    }

    @usableFromInline static let replacementCharacter: Unicode.Scalar = "\u{FFFD}"
}
