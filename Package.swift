// swift-tools-version:6.0
// memo-peer: private, local-network memo sharing. See docs/ and ../shared/DESIGN.md.
import Foundation
import PackageDescription

/// libdbus's header folders, as `pkg-config --cflags dbus-1` gives them on Debian, given by
/// hand: through `pkgConfig` SwiftPM would also link `-ldbus-1`, and libdbus (like
/// libsystemd, libmicrohttpd and Avahi's libraries) is loaded only by the commands that use
/// it (CLazyLibraries).
#if arch(arm64)
  let multiarch = "aarch64-linux-gnu"
#else
  let multiarch = "x86_64-linux-gnu"
#endif
let dbusIncludes = ["/usr/include/dbus-1.0", "/usr/lib/\(multiarch)/dbus-1.0/include"]

/// Errors on warnings everywhere, so "builds without warnings" is enforced by the build itself;
/// libdbus's headers for every module that sees CDBus.
let strict: [SwiftSetting] = [
  .unsafeFlags(["-warnings-as-errors"] + dbusIncludes.flatMap { ["-Xcc", "-I" + $0] })
]

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
    // libyaml: the YAML parser under Markdown front matter (`import --markdown`), wrapped once
    // by MemoMarkdown's YAMLEventParser so no C pointer leaves it.
    .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
    // libsodium: sealed boxes to a device's Ed25519 key (notebook keys, sync version 3).
    .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
    // libdbus, wrapped once by MemoDBus: avahi-daemon's API, desktop notifications.
    // Headers only, as for the next two and CDNSSD: the library is loaded by CLazyLibraries.
    .systemLibrary(name: "CDBus", providers: [.apt(["libdbus-1-dev"])]),
    // libsystemd: sd_notify for Type=notify units (READY, STATUS, WATCHDOG, RELOADING, STOPPING).
    .systemLibrary(name: "CSystemd", providers: [.apt(["libsystemd-dev"])]),
    // GNU libmicrohttpd: the loopback-only HTTP server of `memo-peer web` (MemoWeb).
    .systemLibrary(name: "CMicroHTTPD", providers: [.apt(["libmicrohttpd-dev"])]),
    // The libraries above, Avahi's dns_sd and avahi-client, loaded by the first command that
    // calls them rather than at every start (dlopen): their functions under their own names,
    // hidden in the binary (memo_lazy.h). scripts/deb.sh keeps them in the package's Depends.
    .target(name: "CLazyLibraries", cSettings: [.unsafeFlags(dbusIncludes.map { "-I" + $0 })]),
    // Prefixed C wrappers for OpenSSL macros and parameter builders Swift cannot import.
    .target(name: "COpenSSLShims", dependencies: ["COpenSSL"]),
    // statfs(2) (memory-backed editor files) and the keyring system calls (add_key, keyctl),
    // which Swift's Glibc module does not export.
    .target(name: "CSystemShims"),
    // avahi-client, only to ask the daemon for its version over D-Bus (`memo-peer doctor`).
    .target(name: "CAvahiProbe", dependencies: ["CLazyLibraries"]),

    // Pure logic: no I/O, no C. The domain and its rules: memos, ids, version vectors and the
    // merge, sync rules and limits, notebooks, consent, protection, trust, delivery, errors,
    // and the terminal-safe text those errors quote outside names through.
    .target(name: "MemoCore", swiftSettings: strict),
    // Pure: what crosses the network (frames, the channel seam with its deadlines, limits and
    // transport errors, messages and codecs, the advertisement) and the sans-I/O session
    // machines (pairing, sync, delivery, hello, ping).
    .target(name: "MemoProtocol", dependencies: ["MemoCore"], swiftSettings: strict),
    // Memos as Markdown files (`export --format markdown`, `import --markdown`): the front
    // matter reader (YAML through libyaml, then memo-peer's own checks) and the file format,
    // both ways. Pure apart from libyaml's parser, which reads a string in memory.
    .target(name: "MemoMarkdown", dependencies: ["MemoCore", "MemoSystem", "CYAML"], swiftSettings: strict),
    // Pure: what a person sees beyond the command line's own words: the widget, its settings
    // and its redaction, desktop notices (what is news, what a notice may show), the privacy
    // screen, terminal input, the JSON output shape.
    .target(name: "MemoPresentation", dependencies: ["MemoCore"], swiftSettings: strict),
    // The node on its host, so not in MemoCore: system calls as typed errors (retried on
    // EINTR, naming the call and its errno), threads, the folder watch; where a node's files
    // live (NodePaths) and how they are written (PrivateFiles), where its log goes (Logger); and the few things only full
    // Foundation had (PathText, trimmingBlanks, C strings); loading the
    // C libraries only some commands use (LazyLibrary). MemoCore for MemoPeerError.
    .target(name: "MemoSystem", dependencies: ["MemoCore", "CSystemShims", "CLazyLibraries"], swiftSettings: strict),
    // libcrypto: AEAD sealing, randomness, secret bytes, KDF, Ed25519 signatures; libsodium:
    // sealed boxes.
    .target(
      name: "MemoCrypto",
      dependencies: ["MemoCore", "MemoProtocol", "MemoSystem", "COpenSSL", "COpenSSLShims", "CSodium"],
      swiftSettings: strict
    ),
    // This node's secrets and small files, beside the database: the device keys and the
    // kernel keyring, key files, the sealed identity and discovery keys, the trust store and
    // what a revocation changes in it, the consent log, config.json, pairing attempts.
    .target(
      name: "MemoVault",
      dependencies: ["MemoCore", "MemoProtocol", "MemoPresentation", "MemoCrypto", "MemoSystem", "CSystemShims"],
      swiftSettings: strict),
    // SQLite: the encrypted memo store, migrations, search, the sync's store side. Not
    // MemoVault: the keys that open it come through its own `StoreSecrets` (MemoNode's
    // `VaultStoreSecrets` gives them), and it never writes the trust store or the discovery
    // key (a revocation returns TrustChanges for the caller to apply).
    .target(
      name: "MemoStore",
      dependencies: ["MemoCore", "MemoProtocol", "MemoCrypto", "MemoSystem", "CSQLite"],
      swiftSettings: strict),
    // Memos in and out of the store as files: the passphrase-sealed export archive and the
    // Markdown folders, through the store's public API.
    .target(
      name: "MemoTransfer",
      dependencies: ["MemoCore", "MemoCrypto", "MemoMarkdown", "MemoStore", "MemoSystem"],
      swiftSettings: strict),
    // D-Bus through libdbus, for the system bus (avahi-daemon) and the session bus (desktop
    // notifications): one owner of each connection, typed arguments, errors by their names.
    .target(name: "MemoDBus", dependencies: ["CDBus", "MemoSystem"], swiftSettings: strict),
    // Discovery: register through dns_sd.h (Avahi compat); browse and resolve through
    // avahi-daemon's D-Bus API on one connection (MemoDBus).
    .target(
      name: "MemoDiscovery", dependencies: ["MemoCore", "MemoSystem", "MemoDBus", "CDNSSD"], swiftSettings: strict),
    // TLS 1.3 between devices: identity keys, pinned-key verification, frames on sockets, and
    // the listener's connection budget (who gets a slot).
    .target(
      name: "MemoTransport",
      dependencies: ["MemoCore", "MemoProtocol", "MemoCrypto", "MemoSystem", "COpenSSL", "COpenSSLShims"],
      swiftSettings: strict),
    // The engine: advertising, browsing, the doctor's checks, wiring core to I/O; the life of
    // a connection to a peer (`ConnectionState`), the daemon's seam to systemd
    // (`ServiceNotifier`); the store opened with the vault's keys (`VaultStoreSecrets`).
    .target(
      name: "MemoNode",
      dependencies: [
        "MemoCore", "MemoProtocol", "MemoPresentation", "MemoCrypto", "MemoStore", "MemoVault", "MemoDiscovery",
        "MemoTransport", "MemoSystem", "CAvahiProbe", "CSystemd", "MemoDBus",
      ],
      swiftSettings: strict),
    // The local web page: access rules, routes, API requests, embedded assets (pure), and the
    // libmicrohttpd server on loopback that carries them. The page's files (Sources/MemoWeb/
    // Assets) are compiled into the binary as byte arrays (`PackageResources`, WebAssets.swift):
    // no bundle to find at run time.
    .target(
      name: "MemoWeb", dependencies: ["MemoCore", "MemoPresentation", "MemoCrypto", "MemoSystem", "CMicroHTTPD"],
      resources: [.embedInCode("Assets")],
      swiftSettings: strict),
    // The application layer: the use cases (memos, notebooks, sync, send, inbox and outbox,
    // conflicts, consent, status, protection, trust, ping, browse, pairing, export and
    // import, the daemon) with typed results and the `--json` shapes, which the command line
    // and the web page both answer with. Each use case takes what it needs injected (paths,
    // keys, clock, logger, a prompt, a progress callback), never the environment.
    .target(
      name: "MemoApp",
      dependencies: [
        "MemoCore", "MemoProtocol", "MemoPresentation", "MemoMarkdown", "MemoCrypto", "MemoStore", "MemoVault",
        "MemoTransfer", "MemoNode", "MemoDiscovery", "MemoTransport", "MemoSystem",
      ],
      swiftSettings: strict),
    // The web page's backend: MemoWeb's API calls answered through the use cases of MemoApp,
    // as the command line answers its commands.
    .target(
      name: "MemoWebApp",
      dependencies: ["MemoApp", "MemoWeb", "MemoCore", "MemoPresentation", "MemoStore", "MemoVault", "MemoSystem"],
      swiftSettings: strict),
    // The command line as a library, so it is testable: it parses, calls a use case, prints.
    .target(
      name: "MemoCLI",
      // The terminal's side only: no transport, no discovery, no engine wiring (MemoApp
      // does that); MemoNode for the types of results it prints (sightings, pairing offers).
      dependencies: [
        "MemoApp", "MemoWebApp", "MemoCore", "MemoProtocol", "MemoPresentation", "MemoMarkdown", "MemoCrypto",
        "MemoStore", "MemoVault", "MemoTransfer", "MemoNode", "MemoWeb", "MemoSystem", "CSystemShims",
      ],
      swiftSettings: strict),
    .executableTarget(name: "memo-peer", dependencies: ["MemoCLI"], swiftSettings: strict),
    .executableTarget(
      name: "memo-peer-bench",
      dependencies: [
        "MemoCore", "MemoProtocol", "MemoCrypto", "MemoStore", "MemoVault", "MemoSystem", "MemoTransport", "MemoNode",
        "CSQLite",
      ],
      path: "bench/Sources/memo-peer-bench", swiftSettings: strict),

    // Helpers shared by the test targets: real processes and their output; the in-memory
    // frame channel, two sessions run against each other over it (a sync, for one); a fake
    // keyring; a tmux pane.
    .target(
      name: "MemoTestSupport",
      dependencies: ["MemoCore", "MemoProtocol", "MemoCrypto", "MemoStore", "MemoVault", "MemoNode", "MemoSystem"],
      swiftSettings: strict),

    // The rules' tests reach the wire codecs (MemoProtocol) that carry what the rules check.
    .testTarget(name: "MemoCoreTests", dependencies: ["MemoCore", "MemoProtocol"], swiftSettings: strict),
    // MemoCrypto for the pairing machine's tests, which use OpenSSL's hash and KDF.
    .testTarget(
      name: "MemoProtocolTests", dependencies: ["MemoProtocol", "MemoCore", "MemoCrypto", "MemoTestSupport"],
      swiftSettings: strict),
    .testTarget(name: "MemoSystemTests", dependencies: ["MemoSystem", "MemoCore"], swiftSettings: strict),
    .testTarget(name: "MemoMarkdownTests", dependencies: ["MemoMarkdown", "MemoCore"], swiftSettings: strict),
    .testTarget(name: "MemoPresentationTests", dependencies: ["MemoPresentation", "MemoCore"], swiftSettings: strict),
    .testTarget(
      name: "MemoCryptoTests", dependencies: ["MemoCrypto", "MemoCore"], resources: [.copy("Vectors")],
      swiftSettings: strict),
    .testTarget(
      name: "MemoStoreTests",
      dependencies: [
        "MemoStore", "MemoVault", "MemoTransfer", "MemoCrypto", "MemoCore", "MemoProtocol", "MemoPresentation",
        "MemoNode", "MemoSystem", "MemoTestSupport",
      ],
      resources: [.copy("Fixtures")], swiftSettings: strict),
    .testTarget(
      name: "MemoDiscoveryTests", dependencies: ["MemoDiscovery", "MemoDBus", "MemoCore", "MemoTestSupport"],
      swiftSettings: strict),
    .testTarget(name: "MemoDBusTests", dependencies: ["MemoDBus", "CDBus", "MemoTestSupport"], swiftSettings: strict),
    .testTarget(
      name: "MemoTransportTests",
      dependencies: ["MemoTransport", "MemoCrypto", "MemoCore", "MemoProtocol", "MemoTestSupport"],
      swiftSettings: strict),
    .testTarget(
      name: "MemoNodeTests",
      dependencies: [
        "MemoNode", "MemoCore", "MemoProtocol", "MemoCrypto", "MemoStore", "MemoVault", "MemoTransport", "MemoSystem",
        "MemoTestSupport",
      ],
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
      dependencies: [
        "MemoCore", "MemoProtocol", "MemoCrypto", "MemoStore", "MemoVault", "MemoNode", "MemoTransport", "MemoSystem",
        "MemoTestSupport",
      ],
      path: "Tests/memo-peer-hostile", swiftSettings: strict),
    // The use cases on temporary homes, without a process: what MemoCLITests cannot reach.
    .testTarget(
      name: "MemoAppTests",
      dependencies: [
        "MemoApp", "MemoWebApp", "MemoWeb", "MemoCore", "MemoCrypto", "MemoPresentation", "MemoProtocol", "MemoStore",
        "MemoVault", "MemoTransfer", "MemoNode", "MemoSystem", "MemoTestSupport",
      ],
      swiftSettings: strict),
    .testTarget(name: "MemoWebTests", dependencies: ["MemoWeb", "MemoCore", "MemoCrypto"], swiftSettings: strict),
    // The virtual home lab (scripts/lab): real avahi-daemons in network namespaces. Needs root.
    .testTarget(
      name: "LabTests",
      dependencies: [
        "memo-peer", "memo-peer-test-node", "memo-peer-hostile", "MemoTestSupport", "MemoStore", "MemoVault",
        "MemoNode", "MemoCore", "MemoSystem",
      ],
      swiftSettings: strict),
    .testTarget(
      name: "MemoCLITests",
      dependencies: [
        "MemoCLI", "MemoApp", "MemoCore", "MemoPresentation", "MemoProtocol", "MemoStore", "MemoVault", "MemoNode",
        "MemoWeb", "MemoSystem", "memo-peer", "MemoTestSupport",
      ],
      swiftSettings: strict),
    // Every decoder of outside bytes as a fuzz target (Tests/Fuzz/README.md). It builds in
    // release too: the internal decoders it reaches are `@_spi(Fuzzing) public` in their
    // modules, never `@testable import`.
    .target(
      name: "MemoFuzzTargets",
      dependencies: [
        "MemoCore", "MemoProtocol", "MemoMarkdown", "MemoCrypto", "MemoStore", "MemoVault", "MemoTransfer",
        "MemoDiscovery", "MemoNode", "MemoWeb", "MemoSystem",
      ],
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
