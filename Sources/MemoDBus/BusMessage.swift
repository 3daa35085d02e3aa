internal import CDBus

/// One D-Bus argument, as far as memo-peer's calls and the replies to them need them.
/// Messages are turned into these values as soon as they arrive, so no `DBusMessage` pointer
/// outlives the call that received it.
public enum BusValue: Sendable, Equatable {
  case int32(Int32)
  case uint32(UInt32)
  case uint16(UInt16)
  case string(String)
  case objectPath(String)
  /// An array of bytes (`ay`), such as one TXT entry. Received only: no call sends bytes.
  case bytes([UInt8])
  /// Any other array (`a…`), element by element. Sent with the first element's type, so an
  /// empty one cannot be sent (there is no type to give it).
  case array([BusValue])
  /// A dictionary of variants (`a{sv}`): hints, properties. Sent in the order of its keys.
  case properties([String: BusValue])
  /// A type the calls here do not use; kept as a placeholder so positions still count.
  case unsupported(Character)

  public var int32: Int32? { if case .int32(let value) = self { value } else { nil } }
  public var uint32: UInt32? { if case .uint32(let value) = self { value } else { nil } }
  public var uint16: UInt16? { if case .uint16(let value) = self { value } else { nil } }
  public var string: String? {
    switch self {
    case .string(let value), .objectPath(let value): value
    default: nil
    }
  }

  /// `.array` of `.string`s (`as`).
  public static func strings(_ texts: [String]) -> BusValue { .array(texts.map { .string($0) }) }

  /// The D-Bus type signature of the value as sent; nil for what is never sent.
  var signature: String? {
    switch self {
    case .int32: "i"
    case .uint32: "u"
    case .uint16: "q"
    case .string: "s"
    case .objectPath: "o"
    case .array(let elements): elements.first?.signature.map { "a" + $0 }
    case .properties: "a{sv}"
    case .bytes, .unsupported: nil
    }
  }
}

/// A message received from the bus: a method's reply or error, or a signal.
public struct BusMessage: Sendable {
  public enum Kind: Sendable {
    case methodReturn, error, signal, other
  }

  public let kind: Kind
  /// For replies and errors: the serial of the call answered.
  public let replySerial: UInt32
  public let path: String?
  public let interface: String?
  public let member: String?
  /// For errors: the D-Bus error name (`org.freedesktop.Avahi.TimeoutError`, …).
  public let errorName: String?
  public let arguments: [BusValue]
}

/// A method call to send: destination, object, interface, method and arguments.
public struct BusCall: Sendable {
  public let destination: String
  public let path: String
  public let interface: String
  public let member: String
  public var arguments: [BusValue]
  /// Whether the bus may start the destination's service to answer. Off unless asked: the
  /// system bus could otherwise launch avahi-daemon on demand, so a call to nobody fails
  /// with ServiceUnknown instead. The session bus starts the notification daemon this way.
  public var startsService: Bool

  public init(
    destination: String, path: String, interface: String, member: String, arguments: [BusValue] = [],
    startsService: Bool = false
  ) {
    self.destination = destination
    self.path = path
    self.interface = interface
    self.member = member
    self.arguments = arguments
    self.startsService = startsService
  }
}

/// D-Bus type codes (dbus-protocol.h defines them as casts of character literals, which
/// Swift does not import).
enum BusType {
  static let byte = code("y")
  static let int32 = code("i")
  static let uint32 = code("u")
  static let uint16 = code("q")
  static let string = code("s")
  static let objectPath = code("o")
  static let array = code("a")
  static let variant = code("v")
  static let dictionaryEntry = code("e")
  static let invalid: Int32 = 0

  private static func code(_ character: Unicode.Scalar) -> Int32 { Int32(UInt8(ascii: character)) }
}

/// Conversions between `DBusMessage` and the values above, for `BusConnection`, with
/// pointers that live only for the closure they are given to.
enum BusMessageCoding {
  /// Runs `body` with a new method-call message holding `call`'s arguments, released
  /// afterwards. Nil (and `body` not run) when libdbus is out of memory or an argument
  /// cannot be encoded.
  static func withMessage<R>(_ call: BusCall, _ body: (OpaquePointer) throws -> R) rethrows -> R? {
    guard let message = dbus_message_new_method_call(call.destination, call.path, call.interface, call.member)
    else { return nil }
    defer { dbus_message_unref(message) }
    dbus_message_set_auto_start(message, call.startsService ? 1 : 0)
    var iterator = DBusMessageIter()
    dbus_message_iter_init_append(message, &iterator)
    for argument in call.arguments where !append(argument, to: &iterator) { return nil }
    return try body(message)
  }

  private static func append(_ value: BusValue, to iterator: inout DBusMessageIter) -> Bool {
    switch value {
    case .int32(var number): return dbus_message_iter_append_basic(&iterator, BusType.int32, &number) != 0
    case .uint32(var number): return dbus_message_iter_append_basic(&iterator, BusType.uint32, &number) != 0
    case .uint16(var number): return dbus_message_iter_append_basic(&iterator, BusType.uint16, &number) != 0
    case .string(let text), .objectPath(let text):
      let type = value == .objectPath(text) ? BusType.objectPath : BusType.string
      return text.withCString { pointer in
        var cString: UnsafePointer<CChar>? = pointer
        return dbus_message_iter_append_basic(&iterator, type, &cString) != 0
      }
    case .array(let elements):
      guard let signature = elements.first?.signature, elements.allSatisfy({ $0.signature == signature }) else {
        return false
      }
      return appendContainer(BusType.array, signature, to: &iterator) { array in
        elements.allSatisfy { append($0, to: &array) }
      }
    case .properties(let entries):
      return appendContainer(BusType.array, "{sv}", to: &iterator) { array in
        entries.keys.sorted().allSatisfy { key in
          appendContainer(BusType.dictionaryEntry, nil, to: &array) { entry in
            guard append(.string(key), to: &entry), let value = entries[key], let signature = value.signature else {
              return false
            }
            return appendContainer(BusType.variant, signature, to: &entry) { append(value, to: &$0) }
          }
        }
      }
    case .bytes, .unsupported:
      return false  // no call memo-peer makes sends these
    }
  }

  /// Opens a container, fills it with `body`, and closes it (or abandons it when `body`
  /// fails, which leaves the message unusable: the caller then drops it).
  private static func appendContainer(
    _ type: Int32, _ signature: String?, to iterator: inout DBusMessageIter, _ body: (inout DBusMessageIter) -> Bool
  ) -> Bool {
    var container = DBusMessageIter()
    guard dbus_message_iter_open_container(&iterator, type, signature, &container) != 0 else { return false }
    guard body(&container) else {
      dbus_message_iter_abandon_container(&iterator, &container)
      return false
    }
    return dbus_message_iter_close_container(&iterator, &container) != 0
  }

  /// The parsed form of a received message.
  static func parse(_ message: OpaquePointer) -> BusMessage {
    let kind: BusMessage.Kind
    switch dbus_message_get_type(message) {
    case DBUS_MESSAGE_TYPE_METHOD_RETURN: kind = .methodReturn
    case DBUS_MESSAGE_TYPE_ERROR: kind = .error
    case DBUS_MESSAGE_TYPE_SIGNAL: kind = .signal
    default: kind = .other
    }
    var iterator = DBusMessageIter()
    var arguments: [BusValue] = []
    if dbus_message_iter_init(message, &iterator) != 0 { arguments = values(&iterator) }
    return BusMessage(
      kind: kind, replySerial: dbus_message_get_reply_serial(message),
      path: dbus_message_get_path(message).map { String(cString: $0) },
      interface: dbus_message_get_interface(message).map { String(cString: $0) },
      member: dbus_message_get_member(message).map { String(cString: $0) },
      errorName: dbus_message_get_error_name(message).map { String(cString: $0) }, arguments: arguments)
  }

  private static func values(_ iterator: inout DBusMessageIter) -> [BusValue] {
    var result: [BusValue] = []
    while true {
      let type = dbus_message_iter_get_arg_type(&iterator)
      if type == BusType.invalid { break }
      result.append(value(of: type, &iterator))
      if dbus_message_iter_next(&iterator) == 0 { break }
    }
    return result
  }

  private static func value(of type: Int32, _ iterator: inout DBusMessageIter) -> BusValue {
    switch type {
    case BusType.int32:
      var number: Int32 = 0
      dbus_message_iter_get_basic(&iterator, &number)
      return .int32(number)
    case BusType.uint32:
      var number: UInt32 = 0
      dbus_message_iter_get_basic(&iterator, &number)
      return .uint32(number)
    case BusType.uint16:
      var number: UInt16 = 0
      dbus_message_iter_get_basic(&iterator, &number)
      return .uint16(number)
    case BusType.string, BusType.objectPath:
      var text: UnsafePointer<CChar>?
      dbus_message_iter_get_basic(&iterator, &text)
      let string = text.map { String(cString: $0) } ?? ""
      return type == BusType.string ? .string(string) : .objectPath(string)
    case BusType.array:
      var element = DBusMessageIter()
      dbus_message_iter_recurse(&iterator, &element)
      switch dbus_message_iter_get_element_type(&iterator) {
      case BusType.byte:
        var bytes: UnsafeMutableRawPointer?
        var count: Int32 = 0
        if dbus_message_iter_get_arg_type(&element) == BusType.byte {
          dbus_message_iter_get_fixed_array(&element, &bytes, &count)
        }
        return .bytes(bytes.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(count))) } ?? [])
      case BusType.dictionaryEntry:
        return properties(&element) ?? .unsupported("a")
      default:
        return .array(values(&element))
      }
    default:
      return .unsupported(Character(Unicode.Scalar(UInt8(truncatingIfNeeded: type))))
    }
  }

  /// The entries of an `a{sv}`; nil for a dictionary of any other kind.
  private static func properties(_ entries: inout DBusMessageIter) -> BusValue? {
    var result: [String: BusValue] = [:]
    while dbus_message_iter_get_arg_type(&entries) == BusType.dictionaryEntry {
      var entry = DBusMessageIter()
      dbus_message_iter_recurse(&entries, &entry)
      guard dbus_message_iter_get_arg_type(&entry) == BusType.string,
        case .string(let key) = value(of: BusType.string, &entry),
        dbus_message_iter_next(&entry) != 0, dbus_message_iter_get_arg_type(&entry) == BusType.variant
      else { return nil }
      var variant = DBusMessageIter()
      dbus_message_iter_recurse(&entry, &variant)
      result[key] = value(of: dbus_message_iter_get_arg_type(&variant), &variant)
      if dbus_message_iter_next(&entries) == 0 { break }
    }
    return .properties(result)
  }
}
