import GatehouseSyntax

/// The claims a verified token presents (`Provider.checkPresetRules`): as the issuer signed them (read lazily), or as
/// its preset made them (Apple's string booleans as booleans, Cognito's groups, ...).
enum PresentedClaims {
    case asSigned
    case members([String: JSONValue])
}
