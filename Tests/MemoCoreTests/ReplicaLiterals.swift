@testable import MemoCore

/// Replica ids written as literals in tests (`VersionVector(["a": 1])`): a short name does
/// for the merge rules, which never look inside an id. Production code makes a ReplicaID
/// only from checked text.
extension ReplicaID: ExpressibleByStringLiteral {
  public init(stringLiteral value: String) { self.init(trusted: value) }
}
