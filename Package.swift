// swift-tools-version:6.0
// memo-peer: private, local-network memo sharing. See docs/ and ../shared/DESIGN.md.
import Foundation
import PackageDescription

/// Errors on warnings everywhere, so "builds without warnings" is enforced by the build itself.
let strict: [SwiftSetting] = [.unsafeFlags(["-warnings-as-errors"])]

let package = Package(
  name: "memo-peer",
  products: [
    .executable(name: "memo-peer", targets: ["memo-peer"]),
    .executable(name: "memo-peer-bench", targets: ["memo-peer-bench"]),
  ],
  targets: [
    // System libraries from Debian, found through pkg-config.
    // dns_sd.h is included by path (see Sources/CDNSSD/shim.h): the .pc file's -D_REENTRANT
    // would make SwiftPM warn on every build.
    .systemLibrary(name: "CDNSSD", providers: [.apt(["libavahi-compat-libdnssd-dev"])]),
    .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
    .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
    // libdbus: the browse pipeline speaks avahi-daemon's D-Bus API (MemoDiscovery/Avahi).
    .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
    // libsystemd: sd_notify for Type=notify units (READY, STATUS, WATCHDOG, RELOADING, STOPPING).
    .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
    // GNU libmicrohttpd: the loopback-only HTTP server of `memo-peer web` (MemoWeb).
    .systemLibrary(name: "CMicroHTTPD", providers: [.apt(["libmicrohttpd-dev"])]),
    // Prefixed C wrappers for OpenSSL macros and parameter builders Swift cannot import.
    .target(name: "COpenSSLShims", dependencies: ["COpenSSL"]),
    // statfs(2) (memory-backed editor files) and the keyring system calls (add_key, keyctl),
    // which Swift's Glibc module does not export.
    .target(name: "CSystemShims"),
    // avahi-client, only to ask the daemon for its version over D-Bus (`memo-peer doctor`).
    .target(
      name: "CAvahiProbe", linkerSettings: [.linkedLibrary("avahi-client"), .linkedLibrary("avahi-common")]),

    // Pure logic: no I/O, no C.
    .target(name: "MemoCore", swiftSettings: strict),
    // libcrypto: AEAD sealing, randomness, secret bytes, KDF.
    .target(name: "MemoCrypto", dependencies: ["MemoCore", "COpenSSL", "COpenSSLShims"], swiftSettings: strict),
    // SQLite: the encrypted memo store, device key, migrations, archives.
    .target(
      name: "MemoStore", dependencies: ["MemoCore", "MemoCrypto", "CSQLite", "CSystemShims"], swiftSettings: strict),
    // Discovery: register through dns_sd.h (Avahi compat); browse and resolve through
    // avahi-daemon's D-Bus API on one connection (libdbus).
    .target(name: "MemoDiscovery", dependencies: ["MemoCore", "CDNSSD", "CDBus"], swiftSettings: strict),
    // TLS 1.3 between devices: identity keys, pinned-key verification, frames on sockets.
    .target(
      name: "MemoTransport", dependencies: ["MemoCore", "MemoCrypto", "COpenSSL", "COpenSSLShims"],
      swiftSettings: strict),
    // The engine: advertising, browsing, the doctor's checks, wiring core to I/O.
    .target(
      name: "MemoNode",
      dependencies: [
        "MemoCore", "MemoCrypto", "MemoStore", "MemoDiscovery", "MemoTransport", "CAvahiProbe", "CSystemd", "CDBus",
      ],
      swiftSettings: strict),
    // The local web page: access rules, routes, API requests, embedded assets (pure), and the
    // libmicrohttpd server on loopback that carries them.
    .target(name: "MemoWeb", dependencies: ["MemoCore", "MemoCrypto", "CMicroHTTPD"], swiftSettings: strict),
    // The command line as a library, so it is testable.
    .target(
      name: "MemoCLI",
      dependencies: [
        "MemoCore", "MemoCrypto", "MemoStore", "MemoDiscovery", "MemoNode", "MemoTransport", "MemoWeb", "CSystemShims",
      ],
      swiftSettings: strict),
    .executableTarget(name: "memo-peer", dependencies: ["MemoCLI"], swiftSettings: strict),
    .executableTarget(
      name: "memo-peer-bench", dependencies: ["MemoCore", "MemoCrypto", "MemoStore", "MemoTransport", "CSQLite"],
      path: "bench/Sources/memo-peer-bench", swiftSettings: strict),

    // Helpers shared by the test targets: real processes and their output; the in-memory
    // frame channel, two sessions run against each other over it (a sync, for one); a fake
    // keyring; a tmux pane.
    .target(
      name: "MemoTestSupport", dependencies: ["MemoCore", "MemoCrypto", "MemoStore", "MemoNode"], swiftSettings: strict),

    // MemoCrypto only for the pairing state machine's tests, which use OpenSSL's hash and KDF.
    .testTarget(name: "MemoCoreTests", dependencies: ["MemoCore", "MemoCrypto"], swiftSettings: strict),
    .testTarget(
      name: "MemoCryptoTests", dependencies: ["MemoCrypto"], resources: [.copy("Vectors")],
      swiftSettings: strict),
    .testTarget(
      name: "MemoStoreTests", dependencies: ["MemoStore", "MemoCrypto", "MemoCore", "MemoNode", "MemoTestSupport"],
      resources: [.copy("Fixtures")], swiftSettings: strict),
    .testTarget(
      name: "MemoDiscoveryTests", dependencies: ["MemoDiscovery", "MemoCore", "CDBus"], swiftSettings: strict),
    .testTarget(
      name: "MemoTransportTests", dependencies: ["MemoTransport", "MemoCrypto", "MemoCore", "MemoTestSupport"],
      swiftSettings: strict),
    .testTarget(
      name: "MemoNodeTests",
      dependencies: ["MemoNode", "MemoCore", "MemoCrypto", "MemoStore", "MemoTransport", "MemoTestSupport"],
      swiftSettings: strict),
    // memo-peer with test-only knobs (MemoPeerCLI.Tuning) as leading options; built for the
    // lab tests, never a product.
    .executableTarget(
      name: "memo-peer-test-node", dependencies: ["MemoCLI"], path: "Tests/memo-peer-test-node", swiftSettings: strict),
    // A misbehaving trusted device and a flooding stranger for the lab tests (issue 13): it
    // speaks the protocol wrongly on purpose. Built with the tests; never a product, and
    // nothing in memo-peer depends on it.
    .executableTarget(
      name: "memo-peer-hostile",
      dependencies: ["MemoCore", "MemoCrypto", "MemoStore", "MemoNode", "MemoTransport", "MemoTestSupport"],
      path: "Tests/memo-peer-hostile", swiftSettings: strict),
    .testTarget(name: "MemoWebTests", dependencies: ["MemoWeb", "MemoCore", "MemoCrypto"], swiftSettings: strict),
    // The virtual home lab (scripts/lab): real avahi-daemons in network namespaces. Needs root.
    .testTarget(
      name: "LabTests",
      dependencies: [
        "memo-peer", "memo-peer-test-node", "memo-peer-hostile", "MemoTestSupport", "MemoStore", "MemoCore",
      ],
      swiftSettings: strict),
    .testTarget(
      name: "MemoCLITests", dependencies: ["MemoCLI", "MemoCore", "MemoStore", "memo-peer", "MemoTestSupport"],
      swiftSettings: strict),
    // Every decoder of outside bytes as a fuzz target (Tests/Fuzz/README.md); debug builds
    // only (it reaches internal decoders through @testable import).
    .target(
      name: "MemoFuzzTargets",
      dependencies: ["MemoCore", "MemoCrypto", "MemoStore", "MemoDiscovery", "MemoNode", "MemoWeb"],
      path: "Tests/Fuzz/MemoFuzzTargets", swiftSettings: strict),
    // The committed corpus and every crash libFuzzer found, through the same targets.
    .testTarget(name: "FuzzRegressionTests", dependencies: ["MemoFuzzTargets"], swiftSettings: strict),
  ],
  swiftLanguageModes: [.v6]
)

// `make fuzz` only (MEMO_PEER_FUZZ=1, `swift build --sanitize=fuzzer` into .build-fuzz): the
// libFuzzer binary has no `main` of its own, so it cannot link in an ordinary build.
if ProcessInfo.processInfo.environment["MEMO_PEER_FUZZ"] == "1" {
  package.targets.append(
    .executableTarget(
      name: "memo-peer-fuzz", dependencies: ["MemoFuzzTargets"], path: "Tests/Fuzz/memo-peer-fuzz",
      swiftSettings: strict))
}
