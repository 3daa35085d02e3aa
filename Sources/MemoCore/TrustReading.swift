/// The trusted devices as one reading of the trust file found them, with the file's
/// fingerprint (inode, modification time, size) at that reading.
///
/// Whom this node trusts is what the file says now, not what a reading of it said: a
/// `trust remove` must refuse the device's very next handshake and stop every session in
/// progress from applying what it sends, whether or not the daemon has reloaded yet. A
/// reading answers for the file only while the file's fingerprint is still the one it was
/// taken at; otherwise the file has to be read again.
public struct TrustReading: Sendable, Equatable {
  public var fingerprint: String
  public var devices: Set<DeviceID>

  public init(fingerprint: String, devices: Set<DeviceID>) {
    self.fingerprint = fingerprint
    self.devices = devices
  }

  /// What the readings at hand say of `device`, given the file's fingerprint now.
  public enum Answer: Sendable, Equatable {
    case trusted
    case refused
    /// No reading is of the file as it is now: read it (once; the new reading then answers
    /// for every device until the file changes again).
    case readFile
  }

  /// Whether `device` is trusted, by the first reading taken of the file as it is now
  /// (`fileNow`); `readFile` when none is. Pure: the caller stats the file once and reads
  /// it only when told to.
  public static func answer(for device: DeviceID, fileNow: String, readings: [TrustReading?]) -> Answer {
    guard let current = readings.lazy.compactMap({ $0 }).first(where: { $0.fingerprint == fileNow }) else {
      return .readFile
    }
    return current.devices.contains(device) ? .trusted : .refused
  }
}
