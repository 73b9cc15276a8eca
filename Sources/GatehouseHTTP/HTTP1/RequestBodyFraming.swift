/// How the body of a request is delimited.
public enum RequestBodyFraming: Equatable {
    case none
    case length(Int)
    case chunked
}
