internal import CDBus

/// One D-Bus argument, as far as Avahi's API needs them. Messages are turned into these
/// values as soon as they arrive, so no `DBusMessage` pointer outlives `BusConnection`.
enum BusValue: Sendable, Equatable {
  case int32(Int32)
  case uint32(UInt32)
  case uint16(UInt16)
  case string(String)
  case objectPath(String)
  /// An array of bytes (`ay`), such as one TXT entry.
  case bytes([UInt8])
  /// Any other array (`a…`), element by element.
  case array([BusValue])
  /// A type Avahi's replies do not use here; kept as a placeholder so positions still count.
  case unsupported(Character)

  var int32: Int32? { if case .int32(let value) = self { value } else { nil } }
  var uint16: UInt16? { if case .uint16(let value) = self { value } else { nil } }
  var string: String? {
    switch self {
    case .string(let value), .objectPath(let value): value
    default: nil
    }
  }
}

/// A message received from the bus: a method's reply or error, or a signal.
struct BusMessage: Sendable {
  enum Kind: Sendable {
    case methodReturn, error, signal, other
  }

  let kind: Kind
  /// For replies and errors: the serial of the call answered.
  let replySerial: UInt32
  let path: String?
  let interface: String?
  let member: String?
  /// For errors: the D-Bus error name (`org.freedesktop.Avahi.TimeoutError`, …).
  let errorName: String?
  let arguments: [BusValue]
}

/// A method call to send: destination, object, interface, method and arguments.
struct BusCall: Sendable {
  let destination: String
  let path: String
  let interface: String
  let member: String
  var arguments: [BusValue] = []
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
  static let invalid: Int32 = 0

  private static func code(_ character: Unicode.Scalar) -> Int32 { Int32(UInt8(ascii: character)) }
}

/// Conversions between `DBusMessage` and the values above. Used only by `BusConnection`,
/// on its queue, with pointers it owns for the duration of the call.
enum BusMessageCoding {
  /// A new method-call message with `call`'s arguments; the caller unrefs it. Nil when
  /// libdbus is out of memory or an argument cannot be encoded.
  static func makeMessage(_ call: BusCall) -> OpaquePointer? {
    guard let message = dbus_message_new_method_call(call.destination, call.path, call.interface, call.member)
    else { return nil }
    // Never let the bus start a missing service (the system bus could otherwise launch
    // avahi-daemon on demand): a call to nobody fails with ServiceUnknown instead.
    dbus_message_set_auto_start(message, 0)
    var iterator = DBusMessageIter()
    dbus_message_iter_init_append(message, &iterator)
    for argument in call.arguments where !append(argument, to: &iterator) {
      dbus_message_unref(message)
      return nil
    }
    return message
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
    case .bytes, .array, .unsupported:
      return false  // Avahi's calls used here take only basic arguments.
    }
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
      if dbus_message_iter_get_element_type(&iterator) == BusType.byte {
        var bytes: UnsafeMutableRawPointer?
        var count: Int32 = 0
        if dbus_message_iter_get_arg_type(&element) == BusType.byte {
          dbus_message_iter_get_fixed_array(&element, &bytes, &count)
        }
        return .bytes(bytes.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(count))) } ?? [])
      }
      return .array(values(&element))
    default:
      return .unsupported(Character(Unicode.Scalar(UInt8(truncatingIfNeeded: type))))
    }
  }
}
