import MemoCore
import MemoCrypto
import MemoProtocol
import MemoSystem
import MemoVault

/// One period's advertisement: what goes on the network, and until when.
public struct AdvertisementPlan: Sendable, Equatable {
  public let period: UInt64
  public let instanceName: String
  public let tag: String
  public let txt: [String: String]
  /// When the next period starts and the advertisement must change (ms since the epoch).
  public let validUntil: Timestamp
}

/// Derives this node's rotating advertisement from its discovery key (HMAC-SHA256, see
/// `Advertisement`), and recognises the advertisements of devices whose keys it holds.
public struct AdvertisementIdentity: Sendable {
  private let key: SecureBytes
  public let rotationSeconds: Int64

  public init(key: SecureBytes, rotationSeconds: Int64 = Advertisement.defaultRotationSeconds) {
    self.key = key
    self.rotationSeconds = rotationSeconds
  }

  /// The node's own identity, creating its discovery key on first use.
  public static func load(paths: NodePaths, rotationSeconds: Int64) throws -> AdvertisementIdentity {
    AdvertisementIdentity(key: try NodeSecrets(paths: paths).discoveryKey(), rotationSeconds: rotationSeconds)
  }

  public func plan(at time: Timestamp) throws -> AdvertisementPlan {
    let period = Advertisement.period(at: time, rotationSeconds: rotationSeconds)
    let tag = Advertisement.tag(fromMAC: try mac(Advertisement.tagMessage(period: period)))
    return AdvertisementPlan(
      period: period,
      instanceName: Advertisement.instanceName(fromMAC: try mac(Advertisement.nameMessage(period: period))),
      tag: tag, txt: Advertisement.txtRecord(tag: tag),
      validUntil: Advertisement.periodEnd(at: time, rotationSeconds: rotationSeconds))
  }

  /// Whether `tag` is this key's tag for a period around `time`.
  public func recognizes(tag: String, at time: Timestamp) -> Bool {
    Advertisement.candidatePeriods(at: time, rotationSeconds: rotationSeconds).contains { period in
      (try? self.tag(period: period)) == tag
    }
  }

  /// This key's tag for one period.
  public func tag(period: UInt64) throws -> String {
    Advertisement.tag(fromMAC: try mac(Advertisement.tagMessage(period: period)))
  }

  private func mac(_ message: [UInt8]) throws -> [UInt8] {
    do { return try HMACSHA256.authenticate(key: key, message: message) } catch {
      throw MemoPeerError(.crypto, "computing the advertisement failed", diagnostics: "\(error)")
    }
  }
}
