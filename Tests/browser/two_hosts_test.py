#!/usr/bin/python3
"""Live sync seen in two browsers on two lab hosts: an edit made on one host's web page
appears on the other host's page without a reload. Run by
Tests/LabTests/LiveSyncBrowserLabTests.swift (so `make lab` runs it), twice at once: once
per role, each inside its own lab host's network namespace (`scripts/lab exec HOST
/usr/bin/python3 two_hosts_test.py ROLE`), where `memo-peer serve --web` listens on
loopback. Debian's chromium, headless, driven by selenium through chromedriver, as in
web_page_test.py.

The two processes meet through files in a shared folder ($MEMO_PEER_TWO_HOSTS_WORK):

- `watcher` (host b): signs two browsers in with b's one-time links (`memo-peer web` prints
  the current one), one showing the list, one the memo both hosts hold; marks both
  documents (`window.__marker`), writes `watcher.ready`, waits for `editor.done`, then
  waits (at most 30 s) for the edited title in the list and the open memo, the edited body
  in the open memo, and the new memo's title in the list: no refresh, no navigation, and
  both marks still there at the end.
- `editor` (host a): signs in with a's link, waits for `watcher.ready`, opens the shared
  memo in the page's editor, changes its title and body and saves with the Save button,
  creates a new memo with New memo, and writes `editor.done`.

A role that fails writes `ROLE.failed` (so the other stops waiting), prints `FAILED:` and
why, and exits 1; it exits 0 only after printing `ROLE passed`.

Environment: MEMO_PEER (the binary; MEMO_PEER_HOME comes from `lab exec`),
MEMO_PEER_TWO_HOSTS_WORK (the shared folder), MEMO_PEER_TWO_HOSTS_FIXTURES (a JSON file:
the shared memo's id, its title and body before and after the edit, the new memo's title
and body).
"""

import json
import os
import signal
import subprocess
import sys
import time

from browser_support import WAIT_SECONDS, click, find, present, start_chromium, wait

ROLES = ["watcher", "editor"]
BINARY = os.environ["MEMO_PEER"]
WORK = os.environ["MEMO_PEER_TWO_HOSTS_WORK"]
with open(os.environ["MEMO_PEER_TWO_HOSTS_FIXTURES"], encoding="utf-8") as fixture_file:
    FIXTURES = json.load(fixture_file)
# Bounds on everything: the whole run, the wait for the other role, and the wait for what
# live sync brings (each wait in a page: WAIT_SECONDS, from browser_support).
RUN_SECONDS = 240
PEER_SECONDS = 90
ARRIVAL_SECONDS = 30


def step(text):
    print(f"--- {ROLE}: {text}", flush=True)


# ---- The other role ------------------------------------------------------------------------


def mark(name):
    with open(os.path.join(WORK, name), "w", encoding="utf-8") as marker:
        marker.write(f"{time.time()}\n")


def wait_for_peer(name):
    """Waits for the other role's file `name`; fails at once if the other role failed."""
    other = [role for role in ROLES if role != ROLE][0]
    deadline = time.monotonic() + PEER_SECONDS
    while time.monotonic() < deadline:
        if os.path.exists(os.path.join(WORK, name)):
            return
        if os.path.exists(os.path.join(WORK, other + ".failed")):
            raise AssertionError(f"the {other} failed before it wrote {name}")
        time.sleep(0.1)
    raise AssertionError(f"no {name} from the {other} within {PEER_SECONDS} s")


# ---- The browser -----------------------------------------------------------------------------


def sign_in_link(previous=None):
    """The current one-time link of this host's `serve --web` (a new one once `previous` was
    used)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        result = subprocess.run([BINARY, "web"], capture_output=True, timeout=WAIT_SECONDS, check=False)
        links = [line for line in result.stdout.decode().splitlines() if line.startswith("http://")]
        if result.returncode == 0 and links and links[0] != previous:
            return links[0]
        time.sleep(0.1)
    raise AssertionError(f"memo-peer web printed no new link: {result.returncode} {result.stderr.decode()}")


def start_browser(name):
    folder = os.path.join(WORK, ROLE + "-" + name)
    return start_chromium(
        f"{folder}/profile", f"{folder}/cache", folder + "-chromedriver.log", {"browser": "ALL"})


def sign_in(driver, link):
    driver.get(link)
    wait(driver, lambda: driver.execute_script("return document.body.dataset.ready === 'true'"), "the page")
    base = link.split("/login")[0]
    assert driver.current_url == base + "/", f"signed in at {driver.current_url}"


def text_of(driver, css):
    """The text of the first element `css` finds, empty when there is none."""
    elements = present(driver, css)
    return elements[0].text if elements else ""


def listed_titles(driver):
    return [element.text for element in present(driver, ".memo-item .title")]


def open_memo(driver, memo_id, body):
    click(driver, ".tab[data-view=memos]")
    click(driver, f".memo-item[data-id='{memo_id}']")
    wait(driver, lambda: body in text_of(driver, "#memo-body"), "the memo")


def replace(driver, css, text):
    field = find(driver, css)
    field.clear()
    field.send_keys(text)
    wait(driver, lambda: find(driver, css).get_attribute("value") == text, f"{text!r} in {css}")


def report(driver, name):
    """What a failing page showed: a screenshot, its text, the console."""
    try:
        driver.save_screenshot(os.path.join(WORK, f"{ROLE}-{name}-failure.png"))
        print(f"{name} page at {driver.current_url}:\n{find(driver, 'body').text[:3000]}")
        for entry in driver.get_log("browser"):
            print(f"{name} console:", entry.get("level"), entry.get("message"))
    except Exception:  # noqa: BLE001 (the failure itself matters, not this)
        pass


# ---- The roles -------------------------------------------------------------------------------


def watcher(drivers):
    memo_id = FIXTURES["memo_id"]
    step("sign in twice: one page for the list, one for the memo both hosts hold")
    drivers["list"] = start_browser("list")
    first = sign_in_link()
    sign_in(drivers["list"], first)
    drivers["memo"] = start_browser("memo")
    sign_in(drivers["memo"], sign_in_link(previous=first))
    listing, memo = drivers["list"], drivers["memo"]
    wait(listing, lambda: FIXTURES["title"] in listed_titles(listing), "the shared memo in the list")
    open_memo(memo, memo_id, FIXTURES["body"])
    assert FIXTURES["new_title"] not in listed_titles(listing), "the new memo is there before it was made"
    for driver in drivers.values():
        driver.execute_script("window.__marker = 1;")
    mark("watcher.ready")

    step("wait for the editor on the other host")
    wait_for_peer("editor.done")
    done = time.monotonic()

    step("the edit and the new memo appear without a reload")
    checks = [
        (listing, lambda: FIXTURES["edited_title"] in listed_titles(listing), "the edited title in the list"),
        (listing, lambda: FIXTURES["new_title"] in listed_titles(listing), "the new memo's title in the list"),
        (memo, lambda: FIXTURES["edited_title"] in text_of(memo, "#memo-title"), "the edited title in the open memo"),
        (memo, lambda: FIXTURES["edited_body"] in text_of(memo, "#memo-body"), "the edited body in the open memo"),
    ]
    for driver, condition, what in checks:
        wait(driver, condition, what, seconds=max(0.1, ARRIVAL_SECONDS - (time.monotonic() - done)))
        print(f"    {what}: {time.monotonic() - done:.2f} s after the editor's done", flush=True)
    assert FIXTURES["title"] not in listed_titles(listing), "the list still shows the old title too"
    assert FIXTURES["body"] not in text_of(memo, "#memo-body"), "the open memo still shows the old body"
    for name, driver in drivers.items():
        assert driver.execute_script("return window.__marker === 1;"), f"the {name} page was loaded again"
    assert present(memo, "#edit-button"), "the memo page left the memo"


def editor(drivers):
    memo_id = FIXTURES["memo_id"]
    step("sign in")
    driver = drivers["page"] = start_browser("page")
    sign_in(driver, sign_in_link())
    wait(driver, lambda: FIXTURES["title"] in listed_titles(driver), "the shared memo in the list")
    driver.execute_script("window.__marker = 1;")

    step("wait for the watcher on the other host")
    wait_for_peer("watcher.ready")

    step("edit the shared memo's title and body in the page's editor, and save")
    open_memo(driver, memo_id, FIXTURES["body"])
    click(driver, "#edit-button")
    wait(driver, lambda: present(driver, "#editor-body"), "the editor")
    replace(driver, "#editor-title", FIXTURES["edited_title"])
    replace(driver, "#editor-body", FIXTURES["edited_body"])
    click(driver, "#save-button")
    wait(driver, lambda: FIXTURES["edited_body"] in text_of(driver, "#memo-body")
         and FIXTURES["edited_title"] in text_of(driver, "#memo-title"), "the saved edit")

    step("create a memo with New memo")
    click(driver, ".tab[data-view=memos]")
    click(driver, "#new-memo")
    wait(driver, lambda: present(driver, "#editor-body"), "the editor")
    replace(driver, "#editor-title", FIXTURES["new_title"])
    replace(driver, "#editor-body", FIXTURES["new_body"])
    click(driver, "#save-button")
    wait(driver, lambda: FIXTURES["new_body"] in text_of(driver, "#memo-body"), "the new memo saved")
    assert driver.execute_script("return window.__marker === 1;"), "the editor's page was loaded again"
    mark("editor.done")


def main():
    drivers = {}
    try:
        {"watcher": watcher, "editor": editor}[ROLE](drivers)
        print(f"{ROLE} passed", flush=True)
    except BaseException:
        mark(ROLE + ".failed")
        for name, driver in drivers.items():
            report(driver, name)
        raise
    finally:
        for driver in drivers.values():
            driver.quit()


def alarmed(_signal, _frame):
    raise AssertionError(f"the whole run took longer than {RUN_SECONDS} s")


if __name__ == "__main__":
    ROLE = sys.argv[1] if len(sys.argv) == 2 else ""
    if ROLE not in ROLES:
        print(f"usage: {sys.argv[0]} {'|'.join(ROLES)}", file=sys.stderr)
        sys.exit(2)
    signal.signal(signal.SIGALRM, alarmed)
    signal.alarm(RUN_SECONDS)
    try:
        main()
    except AssertionError as failure:
        print(f"FAILED ({ROLE}): {failure}", file=sys.stderr)
        sys.exit(1)
