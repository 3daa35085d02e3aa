import FoundationEssentials
import MemoCore
import MemoPresentation
import MemoProtocol
import MemoSystem

/// The node's configuration file `config/config.json` (optional; docs/FORMATS.md):
/// extra DNS-SD service types, the advertisement's rotation period, the widget's settings,
/// and whether `serve` sends desktop notifications.
///
/// ```json
/// {"service_types": ["_name._tcp"], "rotation_seconds": 900,
///  "widget": {"show-private-when-locked": false, "protection": "complete"}, "notifications": false}
/// ```
public struct NodeConfig: Sendable {
  public var serviceTypes: [String] = []
  /// Seconds per advertisement rotation period; nil means the default (900).
  public var rotationSeconds: Int64?
  public var widget = WidgetSettings()
  /// `notifications`: desktop notifications from `serve` (default true).
  public var notifications = true
  /// `history`: how many superseded revisions, for how long, and how much in all; the trash's days.
  public var history = HistoryLimits.default
  /// `quotas`: what one peer may bring by sync (new memos a day, a first fill).
  public var quotas = SyncQuotas()

  struct File: Decodable {
    var serviceTypes: [String]?
    var rotationSeconds: Int64?
    var widget: Widget?
    var notifications: Bool?
    var history: History?
    var quotas: Quotas?

    struct Quotas: Decodable {
      var newMemosPerDay: Int?
      var firstFillMemos: Int?

      enum CodingKeys: String, CodingKey {
        case newMemosPerDay = "new_memos_per_day"
        case firstFillMemos = "first_fill_memos"
      }

      @inline(never)
      func quotas(path: String) throws -> SyncQuotas {
        for (name, value) in [("new_memos_per_day", newMemosPerDay), ("first_fill_memos", firstFillMemos)] {
          guard let value, !SyncQuotas.allowed.contains(value) else { continue }
          throw MemoPeerError(
            .invalidInput,
            "\(path): quotas.\(name) must be from \(SyncQuotas.allowed.lowerBound) to \(SyncQuotas.allowed.upperBound)",
            hint: "the defaults are new_memos_per_day \(SyncLimits.maximumNewMemosPerPeerPerDay), "
              + "first_fill_memos \(SyncLimits.maximumFirstFillMemos)")
        }
        let defaults = SyncQuotas()
        return SyncQuotas(
          newMemosPerDay: newMemosPerDay ?? defaults.newMemosPerDay,
          firstFillMemos: firstFillMemos ?? defaults.firstFillMemos)
      }
    }

    struct History: Decodable {
      var revisions: Int?
      var days: Int?
      var totalMiB: Int?
      var trashDays: Int?

      enum CodingKeys: String, CodingKey {
        case revisions, days
        case totalMiB = "total_mib"
        case trashDays = "trash_days"
      }

      /// The limits the file sets, each checked on its own, the defaults for the rest.
      /// A function of its own, out of line: written as a loop over a literal array of
      /// (name, value, range) inside `parse`, the optimiser laid out `parse`'s stack
      /// differently from one build to the next, and the .deb was not reproducible.
      @inline(never)
      func limits(path: String) throws -> HistoryLimits {
        let defaults = HistoryLimits.default
        let revisions = try Self.checked(revisions, "revisions", 0...100_000, path) ?? defaults.revisions
        let days = try Self.checked(days, "days", 0...36_500, path) ?? defaults.days
        let totalMiB = try Self.checked(totalMiB, "total_mib", 0...1_048_576, path)
        let trashDays = try Self.checked(trashDays, "trash_days", 0...3_650, path) ?? defaults.trashDays
        return HistoryLimits(
          revisions: revisions, days: days, totalBytes: totalMiB.map { Int64($0) << 20 } ?? defaults.totalBytes,
          trashDays: trashDays)
      }

      @inline(never)
      static func checked(_ value: Int?, _ name: String, _ range: ClosedRange<Int>, _ path: String) throws -> Int? {
        guard let value, !range.contains(value) else { return value }
        throw MemoPeerError(
          .invalidInput, "\(path): history.\(name) must be from \(range.lowerBound) to \(range.upperBound)",
          hint: "the defaults are revisions 100, days 365, total_mib 256, trash_days 30")
      }
    }

    struct Widget: Decodable {
      var showPrivateWhenLocked: Bool?
      var protection: WidgetSettings.Protection?

      enum CodingKeys: String, CodingKey {
        case showPrivateWhenLocked = "show-private-when-locked"
        case protection
      }
    }

    enum CodingKeys: String, CodingKey {
      case serviceTypes = "service_types"
      case rotationSeconds = "rotation_seconds"
      case widget, notifications, history, quotas
    }
  }

  public static func path(_ paths: NodePaths) -> String { paths.configDirectory + "/config.json" }

  public static func load(paths: NodePaths) throws -> NodeConfig {
    let path = path(paths)
    guard PrivateFiles.exists(path) else { return NodeConfig() }
    return try parse(try PrivateFiles.read(path, limit: 1 << 20), path: path)
  }

  /// The config in a file's bytes (the decoder the fuzz targets run); errors name `path`.
  /// `@_spi(Fuzzing) public`: Tests/Fuzz reaches it without `@testable import`.
  @_spi(Fuzzing) public static func parse(_ bytes: [UInt8], path: String) throws -> NodeConfig {
    guard let file = try? JSONDecoder().decode(File.self, from: Data(bytes)) else {
      throw MemoPeerError(
        .invalidInput, "\(path) is not valid JSON of the expected shape",
        hint: "it holds {\"service_types\": [\"_name._tcp\", …], \"rotation_seconds\": 900, "
          + "\"widget\": {\"show-private-when-locked\": "
          + "true|false, \"protection\": \"none\"|\"complete\"}, \"notifications\": true|false}")
    }
    let types = file.serviceTypes ?? []
    if let bad = types.first(where: { !LocalNetworkManifest.isWellFormed(serviceType: $0) }) {
      throw MemoPeerError(
        .invalidInput, "\(path) declares \(bad.prefix(40)), which is not a DNS-SD service type",
        hint: "service types look like _name._tcp or _name._udp")
    }
    if let rotation = file.rotationSeconds, !Advertisement.rotationRange.contains(rotation) {
      throw MemoPeerError(
        .invalidInput, "\(path): rotation_seconds must be from 1 to 604800", hint: "the default is 900 (15 minutes)")
    }
    var config = NodeConfig(serviceTypes: types, rotationSeconds: file.rotationSeconds)
    config.notifications = file.notifications ?? true
    if let widget = file.widget {
      config.widget = WidgetSettings(
        showPrivateWhenLocked: widget.showPrivateWhenLocked ?? true, protection: widget.protection ?? .none)
    }
    if let history = file.history { config.history = try history.limits(path: path) }
    if let quotas = file.quotas { config.quotas = try quotas.quotas(path: path) }
    return config
  }

  /// The manifest in force: memo-peer's own declarations plus the config's types.
  public var manifest: LocalNetworkManifest { LocalNetworkManifest.builtIn.adding(serviceTypes: serviceTypes) }
}
