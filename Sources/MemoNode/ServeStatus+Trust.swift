import MemoCore

extension ServeStatus {
  /// Whether the daemon that wrote this status has applied the trust file as it is now
  /// (`fileNow`, `TrustStore.fingerprint`) and holds no live link with `removed`: then every
  /// connection of `removed` to or from it is closed. Pure: the caller reads both files.
  /// A later change of the file (the daemon learning a discovery key) makes it wait for that
  /// one too, which the daemon applies the same way.
  public func hasApplied(trustFile fileNow: String, removed: DeviceID) -> Bool {
    trustStore == fileNow && !(livePeers ?? []).contains(removed)
  }
}
