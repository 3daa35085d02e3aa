import MemoCore

/// A device's signed statement that another device is no longer one of the household's
/// (docs/PROTOCOL.md, "Revocations"): `trust remove` and `trust revoke` make one, hellos
/// carry it to every peer, relays forward it, and every device that trusts its maker
/// applies it. The *cut* is what the maker had seen of the revoked device's replicas:
/// revisions signed by the revoked device beyond it are refused everywhere, so what a
/// stolen laptop writes after the revocation reaches nobody who has heard of it.
///
/// ```
/// u8 version (1) · 32 revoker's public key · 32 revoked device ID · u64 made (ms)
/// · u32 n · n × (str replica, u64 sequence), sorted by replica · 64 signature
/// ```
/// The signature (Ed25519 by the revoker) covers `memo-peer/3 revocation`, a zero byte and
/// every byte before it. Pure: checking the signature is the store's (MemoCrypto).
public struct Revocation: Equatable, Sendable {
  public static let version: UInt8 = 1
  /// Replicas in a cut: a device has one or two (its derived replica and a legacy one); a
  /// few more for a store restored from a backup.
  public static let maximumCut = 64
  /// Revocations one hello carries (the newest first, when a device holds more), and their
  /// base64 at most `maximumHelloBytes`, so a hello stays well within its 1 MiB frame.
  public static let maximumPerHello = 256
  public static let maximumHelloBytes = 128 << 10
  /// The largest encoding (a cut of 64 replicas of 32 hex digits fits in 3,200 bytes).
  public static let maximumSize = 4096

  public var revokerKey: [UInt8]
  public var revoked: DeviceID
  /// When the revoker made it (its clock, milliseconds): shown, never compared.
  public var made: Timestamp
  /// Per replica of the revoked device, the highest sequence accepted from it.
  public var cut: [ReplicaID: UInt64]
  public var signature: [UInt8]

  public init(revokerKey: [UInt8], revoked: DeviceID, made: Timestamp, cut: [ReplicaID: UInt64], signature: [UInt8]) {
    self.revokerKey = revokerKey
    self.revoked = revoked
    self.made = made
    self.cut = cut
    self.signature = signature
  }

  /// Everything the signature covers.
  public var body: [UInt8] {
    var writer = ByteWriter()
    writer.u8(Self.version)
    writer.bytes.append(contentsOf: revokerKey)
    writer.bytes.append(contentsOf: revoked.bytes)
    writer.u64(UInt64(bitPattern: made))
    writer.u32(UInt32(cut.count))
    for (replica, seq) in cut.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
      writer.string(replica.rawValue)
      writer.u64(seq)
    }
    return writer.bytes
  }

  public var signedMessage: [UInt8] { Signing.message(.revocation, body) }

  public var encoded: [UInt8] { body + signature }

  /// Why bytes are not a revocation (named in the refusal of the hello that carried them).
  public enum FormatError: Error, Equatable, Sendable {
    case tooLarge, truncated
    case version(UInt8)
    case tooManyReplicas, invalidReplica, unsorted, outOfRange, trailingBytes

    public var detail: String {
      switch self {
      case .tooLarge: "a revocation larger than \(Revocation.maximumSize) bytes"
      case .truncated: "a truncated revocation"
      case .version(let version): "a revocation of version \(version)"
      case .tooManyReplicas: "a revocation whose cut names more than \(Revocation.maximumCut) replicas"
      case .invalidReplica: "a revocation naming an invalid replica id"
      case .unsorted: "a revocation whose cut is not sorted or repeats a replica"
      case .outOfRange: "a revocation with a sequence or a time out of range"
      case .trailingBytes: "bytes after a revocation's signature"
      }
    }
  }

  /// Decodes one revocation, checking every count before what it announces is read; only
  /// the one encoding of a revocation is accepted.
  public static func decode(_ bytes: [UInt8]) throws(FormatError) -> Revocation {
    guard bytes.count <= maximumSize else { throw .tooLarge }
    var reader = ByteReader(bytes)
    guard let version = reader.u8() else { throw .truncated }
    guard version == Self.version else { throw .version(version) }
    guard let key = reader.bytes(32), let revokedBytes = reader.bytes(DeviceID.byteCount),
      let revoked = DeviceID(bytes: revokedBytes), let made = reader.u64(), let count = reader.u32()
    else { throw .truncated }
    guard made <= UInt64(Int64.max) else { throw .outOfRange }
    guard count <= maximumCut else { throw .tooManyReplicas }
    var cut: [ReplicaID: UInt64] = [:]
    var previous: String?
    for _ in 0..<count {
      guard let text = reader.string(), let seq = reader.u64() else { throw .truncated }
      guard let replica = ReplicaID(text), replica.rawValue == text else { throw .invalidReplica }
      guard previous.map({ $0 < text }) ?? true else { throw .unsorted }
      guard seq <= SyncLimits.maximumSequence else { throw .outOfRange }
      previous = text
      cut[replica] = seq
    }
    guard let signature = reader.bytes(SyncRecord.signatureSize) else { throw .truncated }
    guard reader.isAtEnd else { throw .trailingBytes }
    return Revocation(revokerKey: key, revoked: revoked, made: Int64(made), cut: cut, signature: signature)
  }
}

/// Whether a device applies a revocation it verified (docs/PROTOCOL.md, "Revocations").
/// Pure, so the rule is tested without a store.
public enum RevocationRules {
  public enum Decision: Equatable, Sendable {
    /// Stop trusting the revoked device, unshare it everywhere, refuse what it signs
    /// beyond the cut; keep the revocation and pass it on.
    case apply
    /// This device is the one revoked: kept (and passed on, so every other device learns
    /// it), shown in `status`; it cannot undo what another device decided.
    case keepAgainstThisDevice
    /// Not applied, not kept.
    case ignore(String)
  }

  /// What this device knows about the revocation's maker and target.
  public struct Context: Equatable, Sendable {
    public var thisDevice: DeviceID
    /// The maker is trusted here and is a member (not only a relay) of a notebook this
    /// device holds: a relay cannot revoke anybody.
    public var revokerIsTrustedMember: Bool
    /// Devices whose applied revocations revoked the maker here.
    public var revokerRevokedBy: Set<DeviceID>

    public init(thisDevice: DeviceID, revokerIsTrustedMember: Bool, revokerRevokedBy: Set<DeviceID> = []) {
      self.thisDevice = thisDevice
      self.revokerIsTrustedMember = revokerIsTrustedMember
      self.revokerRevokedBy = revokerRevokedBy
    }
  }

  /// A revocation by `revoker` of `revoked`. A maker that was itself revoked here counts
  /// only against the device that revoked it: two devices that revoke each other (a thief
  /// racing the owner) both end up revoked on every device, whichever statement arrives
  /// first, and the person trusts the honest one again. Any other statement by a revoked
  /// device counts for nothing.
  public static func decide(revoker: DeviceID, revoked: DeviceID, _ context: Context) -> Decision {
    if revoker == revoked { return .ignore("a device cannot revoke itself") }
    let authorized = context.revokerIsTrustedMember || context.revokerRevokedBy.contains(revoked)
    guard authorized else { return .ignore("its maker is not a member trusted here") }
    return revoked == context.thisDevice ? .keepAgainstThisDevice : .apply
  }

  /// A device revoked twice keeps, per replica, the lower of the two cuts; a replica one of
  /// them does not name gets nothing accepted (it is left out: no entry is sequence 0).
  public static func lowered(_ held: [ReplicaID: UInt64], by cut: [ReplicaID: UInt64]) -> [ReplicaID: UInt64] {
    var lowered: [ReplicaID: UInt64] = [:]
    for (replica, seq) in held {
      if let other = cut[replica] { lowered[replica] = min(seq, other) }
    }
    return lowered
  }
}
