import Foundation
import XCTest

@testable import MemoWeb

/// The page's files in Sources/MemoWeb/Assets are what the server sends, byte for byte, each
/// with its media type, and none is compiled into the binary for nothing; the page, its
/// script and style stay out of Swift sources.
final class WebAssetsTests: XCTestCase {
  static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Sources")
  static let assets = sources.appendingPathComponent("MemoWeb/Assets")

  func testEveryFileIsServedAsItIs() throws {
    let html = "text/html; charset=utf-8"
    let served: [String: (response: HTTPResponse?, status: Int, type: String)] = [
      "index.html": (WebAssets.asset(at: "/"), 200, html),
      "app.js": (WebAssets.asset(at: "/app.js"), 200, "text/javascript; charset=utf-8"),
      "app.css": (WebAssets.asset(at: "/app.css"), 200, "text/css; charset=utf-8"),
      "icon.svg": (WebAssets.asset(at: "/icon.svg"), 200, "image/svg+xml"),
      "sign-in.html": (WebAssets.signInNotice, 401, html),
      "used-link.html": (WebAssets.usedLinkNotice, 403, html),
    ]
    let files = try FileManager.default.contentsOfDirectory(atPath: Self.assets.path)
    XCTAssertEqual(
      Set(files), Set(served.keys).union(["open.html"]), "every file in Assets is used, and nothing else is there")
    for (name, expected) in served {
      let response = try XCTUnwrap(expected.response, name)
      XCTAssertEqual(response.status, expected.status, name)
      XCTAssertEqual(response.headers, [HTTPField("Content-Type", expected.type)], name)
      let file = try Data(contentsOf: Self.assets.appendingPathComponent(name))
      XCTAssertEqual(response.body, Array(file), "\(name) is served as it is in the file")
    }
    XCTAssertEqual(WebAssets.asset(at: "/index.html"), WebAssets.asset(at: "/"))
    for path in ["/sign-in.html", "/used-link.html", "/Assets/app.js", "/app.js/", "/APP.JS"] {
      XCTAssertNil(WebAssets.asset(at: path), path)
    }
  }

  func testTheLauncherPageSendsTheBrowserOnToTheLink() throws {
    let link = "http://127.0.0.1:8426/login?token=Ab-_09"
    XCTAssertEqual(
      String(decoding: WebAssets.launcher(for: link), as: UTF8.self),
      """
      <!doctype html>
      <html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
      <meta http-equiv="refresh" content="0;url=\(link)"><title>memo-peer</title></head>
      <body><p><a href="\(link)">Open memo-peer</a></p></body></html>

      """)
    let odd = String(decoding: WebAssets.launcher(for: #"http://[::1]:1/"><script>&'"#), as: UTF8.self)
    XCTAssertTrue(odd.contains(#"href="http://[::1]:1/&quot;&gt;&lt;script&gt;&amp;&#39;""#), odd)
    XCTAssertFalse(odd.contains("{{link}}"))
  }

  /// What gives away a page, a script or a style sheet written inside Swift: the files in
  /// Assets are where they belong (edited, linted and reviewed as what they are).
  func testNoSwiftSourceHoldsAPageAScriptOrAStyleSheet() throws {
    let markers = [
      "<!doctype", "<html", "<head>", "<body", "<script", "<style", "<link rel=", "addEventListener(",
      "querySelector", "getElementById(", "createElement(", "textContent =", "@media", "box-sizing", "font-family:",
      "border-radius:",
    ]
    var found: [String] = []
    let files = FileManager.default.enumerator(at: Self.sources, includingPropertiesForKeys: nil)
    while let file = files?.nextObject() as? URL {
      guard file.pathExtension == "swift" else { continue }
      let text = try String(contentsOf: file, encoding: .utf8).lowercased()
      for marker in markers where text.contains(marker.lowercased()) {
        found.append("\(file.path.dropFirst(Self.sources.path.count + 1)): \(marker)")
      }
    }
    XCTAssertEqual(found, [], "put it in Sources/MemoWeb/Assets (docs/WEB.md)")
  }
}
