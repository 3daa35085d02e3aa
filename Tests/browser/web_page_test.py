#!/usr/bin/python3
"""The memo-peer web page in a real browser: Debian's chromium, headless, driven by
selenium through chromedriver. Run by Tests/MemoCLITests/WebBrowserTests.swift (so `make
test` runs it), inside a network namespace of its own that has only a loopback interface:
neither the browser nor the server can reach any other network.

It starts `memo-peer --debug web`, signs in with the one-time link, and goes through the
page as a person would: the list, create, search, edit and delete (the command line must
agree after each), the privacy screen (blur and visibilitychange take every memo text out
of the page; focus brings it back), the inbox, a conflict (side by side, with the line
diff between the sides) kept both ways, the consent prompt (nothing recorded until the
click; then the same text as the terminal's, in the consent log), and the locked page with
its unlock form. Screenshots of the main views go
to $MEMO_PEER_SCREENSHOTS. Every request URL the browser made is written to
$WORK/request-urls.txt, and the server's output to $WORK/server.out and server.err, for
the canary checks of the Swift side; this script checks them too, and that the browser's
disk cache works (a cacheable control page is found in it) but holds no memo text.

Environment: MEMO_PEER (the binary), MEMO_PEER_HOME (a node prepared by the Swift side),
MEMO_PEER_WEB_WORK (scratch directory), MEMO_PEER_WEB_FIXTURES (a JSON file: canaries,
ids and texts of the prepared memos), MEMO_PEER_SCREENSHOTS.
"""

import hashlib
import http.server
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid

from selenium.webdriver.support.ui import Select

from browser_support import WAIT_SECONDS, click, find, present, start_chromium, wait

BINARY = os.environ["MEMO_PEER"]
WORK = os.environ["MEMO_PEER_WEB_WORK"]
SHOTS = os.environ["MEMO_PEER_SCREENSHOTS"]
with open(os.environ["MEMO_PEER_WEB_FIXTURES"], encoding="utf-8") as fixture_file:
    FIXTURES = json.load(fixture_file)
CANARIES = FIXTURES["canaries"]  # name -> value: unique strings that only memo text holds
CACHE = os.path.join(WORK, "cache")
PROFILE = os.path.join(WORK, "profile")
# Bounds on everything: the whole run, each wait.
signal.alarm(600)


def step(text):
    print(f"--- {text}", flush=True)


# ---- The command line, to check what the page did -----------------------------------------


def cli(*arguments, stdin=None):
    result = subprocess.run(
        [BINARY, *arguments], input=(stdin or "").encode(), capture_output=True, timeout=60, check=False
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


def cli_json(*arguments, stdin=None):
    status, out, err = cli(*arguments, "--json", stdin=stdin)
    assert status == 0, f"memo-peer {' '.join(arguments)} --json: {status} {err}"
    return json.loads(out)


def listed():
    return cli_json("list")["memos"]


def body_of(memo_id):
    return cli_json("show", memo_id)["memo"]["body"]


# ---- The server ------------------------------------------------------------------------------


def start_server(*extra, name="server"):
    out = open(os.path.join(WORK, name + ".out"), "wb")
    err = open(os.path.join(WORK, name + ".err"), "wb")
    server = subprocess.Popen([BINARY, "--debug", "web", "--port", "0", *extra], stdout=out, stderr=err)
    deadline = time.time() + WAIT_SECONDS
    while time.time() < deadline:
        lines = printed_links(name)
        if lines:
            return server, lines[0]
        assert server.poll() is None, "memo-peer web exited: " + open(os.path.join(WORK, name + ".err")).read()
        time.sleep(0.1)
    raise AssertionError("memo-peer web printed no link")


def printed_links(name="server"):
    """The one-time links the server printed so far: the first, then one after each sign-in."""
    with open(os.path.join(WORK, name + ".out"), encoding="utf-8") as printed:
        return [line.strip() for line in printed if line.startswith("http://")]


# ---- A cacheable control page: proves the disk cache is in use ------------------------------

CONTROL = "cachecontrol" + uuid.uuid4().hex


class ControlHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the name http.server calls)
        body = (
            f"<!doctype html><title>control</title><link rel=stylesheet href=/control.css><p>{CONTROL}</p>"
            if self.path == "/"
            else f"p::after {{ content: '{CONTROL}'; }}"
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if self.path == "/" else "text/css")
        self.send_header("Cache-Control", "public, max-age=3600")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *arguments):
        pass


def start_control_server():
    control = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ControlHandler)
    threading.Thread(target=control.serve_forever, daemon=True).start()
    return control


# ---- The browser -----------------------------------------------------------------------------


def start_browser(profile=PROFILE):
    return start_chromium(
        profile, CACHE, os.path.join(WORK, "chromedriver.log"), {"performance": "ALL", "browser": "ALL"})


REQUEST_URLS = []


def collect_request_urls(driver):
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            REQUEST_URLS.append(message["params"]["request"]["url"])


def page_text(driver):
    """Everything of the page a snapshot could show: the markup and every field's value."""
    return driver.execute_script(
        "return document.documentElement.outerHTML + '\\n' +"
        " [...document.querySelectorAll('input, textarea, select')].map((e) => e.value).join('\\n');"
    )


def as_escaped(text):
    """A title as the page (and the terminal, TerminalText.display) shows it: a bidirectional
    override escaped, and ` [escaped]` after it."""
    return text.replace("\u202e", "\\u{202e}") + " [escaped]"


def message(driver):
    return find(driver, "#message").text


def shot(driver, name):
    os.makedirs(SHOTS, exist_ok=True)
    driver.save_screenshot(os.path.join(SHOTS, name + ".png"))


def go_tab(driver, view):
    click(driver, f".tab[data-view={view}]")


def memo_text_left(driver, names):
    """The fixtures (by name) whose text is still somewhere in the page."""
    text = page_text(driver)
    return [name for name in names if FIXTURES[name] in text]


def profile_cookie(profile, name):
    """The value of cookie `name` as Chromium wrote it into the profile on disk: the cookie
    database (SQLite), its value sealed with the key Chromium uses without a desktop keyring
    (`--password-store=basic`: AES-128-CBC under PBKDF2("peanuts", "saltysalt")), and, from
    database version 24 on, the SHA-256 of the host before the value. Anyone who can read the
    profile can do the same: what the server's session lifetimes are for."""
    database = os.path.join(profile, "Default", "Cookies")
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        rows = connection.execute("SELECT host_key, name, value, encrypted_value FROM cookies").fetchall()
    finally:
        connection.close()
    key = hashlib.pbkdf2_hmac("sha1", b"peanuts", b"saltysalt", 1, 16)
    for host, cookie, value, sealed in rows:
        if cookie != name:
            continue
        if value:
            return value
        assert sealed[:3] == b"v10", f"a cookie sealed as {sealed[:3]!r}"
        plain = subprocess.run(
            ["openssl", "enc", "-d", "-aes-128-cbc", "-K", key.hex(), "-iv", "20" * 16],
            input=sealed[3:], capture_output=True, check=True,
        ).stdout
        if len(plain) > 32 and plain[:32] == hashlib.sha256(host.encode()).digest():
            plain = plain[32:]
        return plain.decode()
    raise AssertionError(f"no cookie {name} in {database}")


def status_with_cookie(base, name, value, path="/api/memos"):
    result = subprocess.run(
        ["curl", "-s", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}", "-H", f"Cookie: {name}={value}", base + path],
        capture_output=True, check=False,
    )
    return int(result.stdout.decode() or 0)


def cookie_copied_after(base_link, profile):
    """Signs a fresh browser in with `base_link`, closes it (Chromium writes its cookies to the
    profile), and returns the session cookie's name and value read back from the disk."""
    driver = start_browser(profile)
    try:
        driver.get(base_link)
        wait(driver, lambda: driver.execute_script("return document.body.dataset.ready === 'true'"), "the page")
    finally:
        driver.quit()
    port = base_link.split("/login")[0].rsplit(":", 1)[1]
    name = f"memo_peer_session_{port}"
    return name, profile_cookie(profile, name)


# ---- The scenario ----------------------------------------------------------------------------


def scenario(driver, link, control_url):
    base = link.split("/login")[0]
    fixtures = FIXTURES

    step("the disk cache is in use: a cacheable control page")
    driver.get(control_url)
    wait(driver, lambda: CONTROL in driver.page_source, "the control page")

    step("the consent is undetermined before the page is opened")
    assert cli_json("consent", "status")["scopes"]["local-network"]["state"] == "undetermined"

    step("sign in with the one-time link; the token leaves the address bar")
    driver.get(link)
    wait(driver, lambda: driver.execute_script("return document.body.dataset.ready === 'true'"), "the page")
    assert driver.current_url == base + "/", driver.current_url
    wait(driver, lambda: fixtures["public_title"] in page_text(driver), "the list")
    assert fixtures["private_title"] in page_text(driver)
    shot(driver, "list")

    step("the used link does not sign anyone in again")
    second = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", link], capture_output=True, check=False)
    assert second.stdout.decode() == "403", second.stdout

    step("create a memo")
    click(driver, "#new-memo")
    wait(driver, lambda: present(driver, "#editor-body"), "the editor")
    find(driver, "#editor-title").send_keys(fixtures["new_title"])
    find(driver, "#editor-tags").send_keys("webtest")
    find(driver, "#editor-body").send_keys(fixtures["new_body"])
    click(driver, "#save-button")
    wait(driver, lambda: present(driver, "#memo-body") and fixtures["new_body"] in find(driver, "#memo-body").text,
         "the new memo")
    created = [memo for memo in listed() if memo["title"] == fixtures["new_title"]]
    assert len(created) == 1, "the command line lists the new memo once"
    memo_id = created[0]["id"]
    assert created[0]["tags"] == ["webtest"]
    assert body_of(memo_id) == fixtures["new_body"]
    shot(driver, "memo")

    step("what another process stores (as live sync does) appears without a reload")
    driver.execute_script("window.__sameDocument = true;")
    go_tab(driver, "memos")
    status, arrived, err = cli("new", "--title", "arrived while the list was open", stdin="from elsewhere\n")
    assert status == 0, err
    arrived = arrived.strip()
    wait(driver, lambda: "arrived while the list was open" in page_text(driver), "the list, reloaded by the page itself")
    click(driver, f".memo-item[data-id='{arrived}']")
    wait(driver, lambda: present(driver, "#memo-body") and "from elsewhere" in find(driver, "#memo-body").text,
         "the arrived memo")
    status, _, err = cli("edit", arrived, "--stdin", stdin="changed behind the page's back\n")
    assert status == 0, err
    wait(driver, lambda: "changed behind the page's back" in find(driver, "#memo-body").text,
         "the open memo, reloaded by the page itself")
    assert driver.execute_script("return window.__sameDocument === true;"), "the page was reloaded"
    go_tab(driver, "memos")
    wait(driver, lambda: present(driver, f".memo-item[data-id='{memo_id}']"), "the memo in the list")
    click(driver, f".memo-item[data-id='{memo_id}']")
    wait(driver, lambda: present(driver, "#memo-body") and fixtures["new_body"] in find(driver, "#memo-body").text,
         "the memo open again")

    step("privacy screen: blur takes the memo text out of the page, focus brings it back")
    driver.execute_script("window.dispatchEvent(new Event('blur'));")
    text = page_text(driver)
    assert fixtures["new_body"] not in text and fixtures["new_title"] not in text, "memo text left in the page"
    assert fixtures["public_title"] not in text
    assert find(driver, "#privacy-screen").is_displayed()
    driver.execute_script("window.dispatchEvent(new Event('focus'));")
    wait(driver, lambda: fixtures["new_body"] in page_text(driver), "the memo back after focus")

    step("privacy screen: visibilitychange to hidden and back")
    driver.execute_script(
        "Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'hidden'});"
        "Object.defineProperty(document, 'hidden', {configurable: true, get: () => true});"
        "document.dispatchEvent(new Event('visibilitychange'));"
    )
    text = page_text(driver)
    assert fixtures["new_body"] not in text and fixtures["new_title"] not in text, "memo text left in a hidden tab"
    driver.execute_script(
        "Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'visible'});"
        "Object.defineProperty(document, 'hidden', {configurable: true, get: () => false});"
        "document.dispatchEvent(new Event('visibilitychange'));"
    )
    wait(driver, lambda: fixtures["new_body"] in page_text(driver), "the memo back when visible")

    step("edit it; unsaved text leaves the page on blur and comes back into the editor")
    click(driver, "#edit-button")
    wait(driver, lambda: present(driver, "#editor-body"), "the editor")
    editor = find(driver, "#editor-body")
    editor.clear()
    editor.send_keys(fixtures["edited_body"])
    driver.execute_script("window.dispatchEvent(new Event('blur'));")
    assert fixtures["edited_body"] not in page_text(driver), "unsaved text left in the page"
    driver.execute_script("window.dispatchEvent(new Event('focus'));")
    wait(driver, lambda: present(driver, "#editor-body") and find(driver, "#editor-body").get_attribute("value")
         == fixtures["edited_body"], "the unsaved text back in the editor")
    click(driver, "#save-button")
    wait(driver, lambda: present(driver, "#memo-body") and fixtures["edited_body"] in find(driver, "#memo-body").text,
         "the edited memo")
    assert body_of(memo_id) == fixtures["edited_body"], "the command line shows the edit"

    step("search and the tag filter")
    go_tab(driver, "memos")
    wait(driver, lambda: present(driver, "#search"), "the list")
    find(driver, "#search").send_keys(fixtures["edited_word"])
    wait(driver, lambda: [item.get_attribute("data-id") for item in present(driver, ".memo-item")] == [memo_id],
         "the search result")
    search = find(driver, "#search")
    search.clear()
    search.send_keys(fixtures["public_body_word"])
    wait(driver, lambda: [item.get_attribute("data-id") for item in present(driver, ".memo-item")]
         == [fixtures["public_id"]], "the public memo found by a word of its body")
    find(driver, "#search").clear()
    find(driver, "#search").send_keys(" ")
    Select(find(driver, "#tag-filter")).select_by_value("webtest")
    wait(driver, lambda: [item.get_attribute("data-id") for item in present(driver, ".memo-item")] == [memo_id],
         "the tag filter")
    Select(find(driver, "#tag-filter")).select_by_value("")
    wait(driver, lambda: len(present(driver, ".memo-item")) > 1, "the whole list again")

    step("history: each revision with its author, a line diff, and Restore as a new revision")
    go_tab(driver, "memos")
    click(driver, f".memo-item[data-id='{memo_id}']")
    wait(driver, lambda: present(driver, "#memo-author"), "the memo")
    wait(driver, lambda: "edited on this device" in find(driver, "#memo-author").text, "the memo's author")
    click(driver, "#history-button")
    wait(driver, lambda: len(present(driver, "#history-list li")) == 2, "the two revisions")
    first = find(driver, "#history-list li[data-revision='1']")
    assert "this device" in first.text, first.text
    click(driver, "#history-list li[data-revision='1'] .diff-button")
    wait(driver, lambda: present(driver, "#diff .diff-added"), "the diff")
    added = "".join(e.text for e in present(driver, "#diff .diff-added"))
    removed = "".join(e.text for e in present(driver, "#diff .diff-removed"))
    assert fixtures["edited_body"].split("\n")[0] in added, added
    assert fixtures["new_body"].split("\n")[0] in removed, removed
    shot(driver, "history")
    click(driver, "#history-list li[data-revision='1'] .restore-button")
    wait(driver, lambda: present(driver, "#dialog [data-action=confirm]"), "the confirmation")
    click(driver, "#dialog [data-action=confirm]")
    wait(driver, lambda: "Restored revision 1" in message(driver), "the restore")
    assert body_of(memo_id) == fixtures["new_body"], "the command line shows the restored text"
    assert [r["revision"] for r in cli_json("history", memo_id)["revisions"]] == [1, 2, 3]
    go_tab(driver, "memos")
    wait(driver, lambda: present(driver, "#search"), "the list")

    step("a synced title with a right-to-left override is isolated: in the list and in the delete dialog")
    bidi = fixtures["bidi_id"]
    wait(driver, lambda: present(driver, f".memo-item[data-id='{bidi}']"), "the memo with the override")
    isolated = driver.execute_script(
        "const bdi = document.querySelector(`.memo-item[data-id='${arguments[0]}'] .title bdi`);"
        "return bdi && [bdi.getAttribute('dir'), getComputedStyle(bdi).unicodeBidi, bdi.textContent];", bidi)
    assert isolated == ["auto", "isolate", as_escaped(fixtures["bidi_title"])], isolated
    click(driver, f".memo-item[data-id='{bidi}']")
    wait(driver, lambda: present(driver, "#delete-button"), "the memo")
    assert driver.execute_script("return getComputedStyle(document.querySelector('#memo-title bdi')).unicodeBidi") \
        == "isolate"
    click(driver, "#delete-button")
    wait(driver, lambda: present(driver, "#dialog [data-action=confirm]"), "the confirmation")
    # The title sits in its own <bdi>; the sentence goes on after it, left to right, on the
    # same line: the override does not reach past the title.
    layout = driver.execute_script(
        "const p = document.querySelector('#dialog p'); const bdi = p.querySelector('bdi');"
        "const after = document.createRange(); after.selectNodeContents(bdi.nextSibling);"
        "const before = document.createRange(); before.selectNodeContents(bdi.previousSibling);"
        "const title = bdi.getBoundingClientRect(); const next = after.getClientRects()[0];"
        "const last = before.getClientRects()[0];"
        "return {dir: bdi.getAttribute('dir'), bidi: getComputedStyle(bdi).unicodeBidi, text: bdi.textContent,"
        " titleLeft: title.left, titleRight: title.right, titleTop: title.top, nextLeft: next.left,"
        " nextTop: next.top, quoteRight: last.right, sentence: p.textContent};")
    assert layout["dir"] == "auto" and layout["bidi"] == "isolate" and layout["text"] == as_escaped(fixtures["bidi_title"]), \
        layout
    assert layout["sentence"].startswith("“" + as_escaped(fixtures["bidi_title"]) + "” is deleted here"), layout
    assert layout["quoteRight"] <= layout["titleLeft"] + 1, f"the opening quote comes first: {layout}"
    if abs(layout["nextTop"] - layout["titleTop"]) < 4:
        assert layout["nextLeft"] >= layout["titleRight"] - 1, f"the sentence goes on after the title: {layout}"
    shot(driver, "bidi")
    click(driver, "#dialog [data-action=cancel]")
    assert bidi in [memo["id"] for memo in listed()], "cancel deleted nothing"
    go_tab(driver, "memos")
    wait(driver, lambda: present(driver, "#search"), "the list")

    step("delete it, after the page's own confirmation")
    click(driver, f".memo-item[data-id='{memo_id}']")
    wait(driver, lambda: present(driver, "#delete-button"), "the memo")
    click(driver, "#delete-button")
    wait(driver, lambda: present(driver, "#dialog [data-action=confirm]"), "the confirmation")
    click(driver, "#dialog [data-action=confirm]")
    wait(driver, lambda: message(driver) == "Deleted.", "the delete")
    assert memo_id not in [memo["id"] for memo in listed()], "the command line no longer lists it"
    assert cli("show", memo_id)[0] == 3

    step("the trash: the deleted memo, who deleted it, and Restore")
    go_tab(driver, "trash")
    # Read inside a wait: the page redraws the trash when the change it shows arrives.
    entry_css = f"#trash-list li[data-id='{memo_id}']"
    wait(
        driver,
        lambda: present(driver, entry_css)
        and fixtures["new_title"] in find(driver, entry_css).text
        and "deleted by this device" in find(driver, entry_css).text,
        "the deleted memo in the trash, deleted by this device",
    )
    click(driver, f"#trash-list li[data-id='{memo_id}'] .restore-button")
    wait(driver, lambda: message(driver) == "Restored.", "the restore from the trash")
    assert body_of(memo_id) == fixtures["new_body"], "back, with its text"
    assert cli_json("trash")["trash"] == []
    status, _, err = cli("delete", memo_id, "--yes")
    assert status == 0, err

    step("accept the inbox memo")
    go_tab(driver, "inbox")
    wait(driver, lambda: present(driver, ".inbox-item"), "the inbox")
    assert fixtures["inbox_title"] in page_text(driver)
    click(driver, ".inbox-item [data-action=accept]")
    wait(driver, lambda: "Accepted" in message(driver), "the acceptance")
    assert cli_json("inbox")["entries"] == []
    accepted = [memo for memo in listed() if memo["title"] == fixtures["inbox_title"]]
    assert len(accepted) == 1 and body_of(accepted[0]["id"]) == fixtures["inbox_body"]

    step("a conflict, side by side, kept both ways")
    go_tab(driver, "conflicts")
    wait(driver, lambda: present(driver, ".conflict-item"), "the conflicts")
    click(driver, ".conflict-item")
    wait(driver, lambda: present(driver, "#version-a") and present(driver, "#version-b"), "the two versions")
    # Read inside a wait: a change mark that moves (the inbox memo just accepted) may redraw
    # the view between finding an element and reading its text.
    wait(driver, lambda: fixtures["conflict_body_a"] in find(driver, "#version-a").text, "version A's text")
    wait(driver, lambda: fixtures["conflict_body_b"] in find(driver, "#version-b").text, "version B's text")

    def diff_lines(kind):
        return "".join(e.text for e in present(driver, f"#conflict-diff .diff-{kind}"))

    # The line diff between the two sides: the shared first line kept, A's line removed,
    # B's added; each side's author named in an isolate.
    wait(driver, lambda: "Shopping list" in diff_lines("same") and fixtures["conflict_body_a"] in diff_lines("removed")
         and fixtures["conflict_body_b"] in diff_lines("added"), "the line diff between the two sides")
    assert fixtures["conflict_body_b"] not in diff_lines("removed"), diff_lines("removed")
    assert len(present(driver, "#conflict-diff .meta bdi[dir=auto]")) == 2, "each side's author isolated"
    shot(driver, "conflict")
    click(driver, "#keep-both")
    wait(driver, lambda: "Resolved" in message(driver), "the resolution")
    assert cli_json("conflicts")["conflicts"] == []
    bodies = [body_of(memo["id"]) for memo in listed()]
    for version in ["conflict_body_a", "conflict_body_b"]:
        assert len([body for body in bodies if fixtures[version] in body]) == 1, f"{version} kept as one memo"
    assert all(not memo["conflict"] and "conflict_of" not in memo for memo in listed())

    step("devices: a notebook shared with this device waits for a person, who accepts it")
    go_tab(driver, "devices")
    wait(driver, lambda: "No trusted devices yet" in find(driver, "#content").text, "the devices view")
    invitation = f".invitation-item[data-id='{fixtures['invited_id']}']"
    wait(driver, lambda: present(driver, invitation) and fixtures["invited_name"] in find(driver, invitation).text,
         "the invitation, with the name the sharing device gave the notebook")
    assert [n for n in cli_json("notebook", "list")["notebooks"] if n["id"] == fixtures["invited_id"]] == []
    click(driver, f"{invitation} [data-action=accept]")
    wait(driver, lambda: "Accepted" in message(driver), "the acceptance")
    accepted = [n for n in cli_json("notebook", "list")["notebooks"] if n["id"] == fixtures["invited_id"]]
    assert len(accepted) == 1 and accepted[0]["name"] == fixtures["invited_name"], accepted
    assert cli_json("notebook", "invitations")["invitations"] == []

    step("consent: asked only on the Sync click, recorded only on Allow, with the terminal's text")
    consent = cli_json("consent", "status")
    assert consent["scopes"]["local-network"]["state"] == "undetermined", "nothing recorded before the click"
    click(driver, "#sync-button")
    wait(driver, lambda: present(driver, "#consent-text"), "the consent prompt")
    shown = find(driver, "#consent-text").text
    assert shown == consent["usage_text"], f"the prompt shows the terminal's text: {shown!r}"
    assert cli_json("consent", "status")["scopes"]["local-network"]["state"] == "undetermined", "the prompt alone records nothing"
    shot(driver, "consent")
    click(driver, "#dialog [data-action=allow]")
    wait(driver, lambda: "trusts no device" in message(driver), "the sync, with nobody to sync with")
    after = cli_json("consent", "status")["scopes"]["local-network"]
    assert after["state"] == "granted", after
    assert after["last"]["usage_text"] == shown and after["last"]["method"] == "web", after["last"]

    step("locked with the editor open: memo-peer lock takes every memo text out of the page within 2 s")
    go_tab(driver, "memos")
    status, _, err = cli("protect", "complete", "--new-passphrase-fd", "0", stdin=CANARIES["passphrase"] + "\n")
    assert status == 0, err
    open_in_editor(driver, fixtures["public_id"], fixtures["unsaved"])
    on_page = ["public_title", "public_body", "private_title", "unsaved"]
    assert memo_text_left(driver, ["public_title", "public_body", "unsaved"]) == ["public_title", "public_body", "unsaved"]
    status, _, err = cli("lock")
    locked_at = time.monotonic()
    assert status == 0, err
    wait(driver, lambda: not memo_text_left(driver, on_page), "no memo text in the page after the lock", seconds=5)
    took = time.monotonic() - locked_at
    print(f"    memo text gone {took:.2f} s after memo-peer lock", flush=True)
    assert took <= 2.0, f"the page took {took:.2f} s"
    assert present(driver, "#unlock-form"), "the unlock form"
    assert "dropped" in message(driver), message(driver)
    for name in ["private_title", "public_body", "private_body", "public_tag", "private_tag", "public_title"]:
        assert fixtures[name] not in page_text(driver), f"{name} shown while locked"
    field = find(driver, "#passphrase")
    assert field.get_attribute("type") == "password"
    assert field.get_attribute("autocomplete") == "off"
    assert find(driver, "#unlock-form").get_attribute("autocomplete") == "off"
    shot(driver, "locked")
    unlock_on_page(driver)

    step("the complete idle timeout with the editor open: the same, within 2 s of the lock")
    status, _, err = cli("protect", "complete", "--idle-timeout", "6", "--passphrase-fd", "0",
                         stdin=CANARIES["passphrase"] + "\n")
    assert status == 0, err
    wait(driver, lambda: cli_json("status")["protection"].get("idle_timeout") == 6, "the new idle timeout")
    open_in_editor(driver, fixtures["public_id"], fixtures["unsaved_idle"])
    wait(driver, lambda: present(driver, "#editor-lock-warning"), "the editor's warning that a lock drops unsaved text")
    locked_at = None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if locked_at is None and cli_json("status")["protection"]["state"] == "locked":
            locked_at = time.monotonic()
        if locked_at is not None and not memo_text_left(driver, ["public_title", "public_body", "unsaved_idle"]):
            break
        time.sleep(0.05)
    assert locked_at is not None, "the idle timeout locked the node"
    took = time.monotonic() - locked_at
    print(f"    memo text gone {took:.2f} s after the idle timeout locked the node", flush=True)
    assert not memo_text_left(driver, on_page + ["unsaved_idle"]), "memo text left after the idle lock"
    assert took <= 2.0, f"the page took {took:.2f} s"
    assert "dropped" in message(driver), message(driver)
    unlock_on_page(driver)
    # No idle timeout for the rest of the test.
    status, _, err = cli("protect", "after-first-unlock", "--passphrase-fd", "0", stdin=CANARIES["passphrase"] + "\n")
    assert status == 0, err

    step("sign out")
    click(driver, "#sign-out-button")
    wait(driver, lambda: "Signed out" in driver.page_source, "the signed-out page")
    driver.get(base + "/")
    wait(driver, lambda: "not signed in" in driver.page_source, "the sign-in notice")
    collect_request_urls(driver)


def open_in_editor(driver, memo_id, typed):
    """Opens the memo in the editor and types `typed` into its body, unsaved."""
    go_tab(driver, "memos")
    click(driver, f".memo-item[data-id='{memo_id}']")
    wait(driver, lambda: present(driver, "#edit-button"), "the memo")
    click(driver, "#edit-button")
    wait(driver, lambda: present(driver, "#editor-body"), "the editor")
    find(driver, "#editor-body").send_keys(" " + typed)
    wait(driver, lambda: typed in find(driver, "#editor-body").get_attribute("value"), "the typed text")


def unlock_on_page(driver):
    """Unlocks with the page's form (the suspended session gets a new cookie) and waits for
    the list, private titles included."""
    find(driver, "#passphrase").send_keys(CANARIES["passphrase"])
    click(driver, "#unlock-button")
    wait(driver, lambda: not present(driver, "#unlock-form"), "the unlock")
    assert cli_json("status")["protection"]["state"] == "unlocked"
    wait(driver, lambda: FIXTURES["private_title"] in page_text(driver), "private titles back")
    assert CANARIES["passphrase"] not in page_text(driver), "the passphrase stays out of the page"


def cookie_lifetimes():
    """A session cookie copied out of the browser's profile on disk works while the session
    lives, and gets 401 after the idle lifetime, and after a lock."""
    server, link = start_server("--session-timeout", "10s", name="server2")
    try:
        base = link.split("/login")[0]
        name, value = cookie_copied_after(link, os.path.join(WORK, "profile-idle"))
        assert status_with_cookie(base, name, value) == 200, "the copied cookie works at first"
        time.sleep(11)
        assert status_with_cookie(base, name, value) == 401, "after the idle lifetime"
        deadline = time.monotonic() + WAIT_SECONDS
        while len(printed_links("server2")) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        name, value = cookie_copied_after(printed_links("server2")[-1], os.path.join(WORK, "profile-lock"))
        assert status_with_cookie(base, name, value) == 200
        status, _, err = cli("lock")
        assert status == 0, err
        time.sleep(0.5)
        assert status_with_cookie(base, name, value) == 401, "after lock"
        assert status_with_cookie(base, name, value, "/api/status") == 401
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=WAIT_SECONDS) == 0


def scan_directory(root):
    findings = []
    found_control = False
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            if CONTROL.encode() in data:
                found_control = True
            for kind, value in CANARIES.items():
                if value.encode() in data:
                    findings.append(f"{path} holds {kind}")
    return findings, found_control


def main():
    control = start_control_server()
    server, link = start_server()
    driver = None
    try:
        driver = start_browser()
        scenario(driver, link, f"http://127.0.0.1:{control.server_address[1]}/")
        driver.quit()
        driver = None

        step("no memo text in any request URL")
        with open(os.path.join(WORK, "request-urls.txt"), "w", encoding="utf-8") as urls:
            urls.write("\n".join(REQUEST_URLS) + "\n")
        assert len(REQUEST_URLS) > 20, f"only {len(REQUEST_URLS)} requests were seen"
        leaks = [url for url in REQUEST_URLS for value in CANARIES.values() if value in url]
        assert not leaks, leaks

        step("the disk cache holds the control page and no memo text")
        findings, found_control = scan_directory(CACHE)
        assert found_control, "the control page is not in the disk cache: the check would prove nothing"
        assert not findings, findings

        step("the server stops on SIGTERM and removes its sign-in link")
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=WAIT_SECONDS) == 0

        step("a session cookie copied out of the profile: refused after its idle lifetime, and after lock")
        cookie_lifetimes()
        print("browser test passed", flush=True)
    except BaseException:
        if driver is not None:
            try:
                shot(driver, "failure")
                print(driver.page_source[:6000])
                for entry in driver.get_log("browser"):
                    print("console:", entry.get("level"), entry.get("message"))
            except Exception:  # noqa: BLE001 (the failure itself matters, not this)
                pass
        raise
    finally:
        if driver is not None:
            driver.quit()
        if server.poll() is None:
            server.kill()
            server.wait()
        control.shutdown()


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
