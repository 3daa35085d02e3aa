#!/usr/bin/python3
"""Accepting an invitation on the page is an event (issue 39): on a lab host whose live link
is up, a person presses Accept in the Devices view, and the notebook's memos appear in the
page's list with nobody pressing Sync and no reload. Run by
Tests/LabTests/LiveSyncBrowserLabTests.swift inside the invited host's network namespace
(`scripts/lab exec HOST /usr/bin/python3 accept_on_page_test.py`), where `memo-peer serve
--web` listens on loopback. Debian's chromium, headless, driven by selenium through
chromedriver, as in two_hosts_test.py.

Before, the page said "No memos yet" until someone synced: the daemon looked only at the
change feed, which an accept does not move.

Prints `accept passed` and exits 0, or prints `FAILED:` and why and exits 1.

Environment: MEMO_PEER (the binary; MEMO_PEER_HOME comes from `lab exec`),
MEMO_PEER_ACCEPT_WORK (a folder for the browser's profile and logs),
MEMO_PEER_ACCEPT_FIXTURES (a JSON file: the invitation's notebook id, the titles of the
memos it holds).
"""

import json
import os
import signal
import subprocess
import sys

from browser_support import WAIT_SECONDS, click, find, present, start_chromium, wait

BINARY = os.environ["MEMO_PEER"]
WORK = os.environ["MEMO_PEER_ACCEPT_WORK"]
with open(os.environ["MEMO_PEER_ACCEPT_FIXTURES"], encoding="utf-8") as fixture_file:
    FIXTURES = json.load(fixture_file)
# Bounds on everything: the whole run, and the wait for what live sync brings.
RUN_SECONDS = 120
ARRIVAL_SECONDS = 20


def step(text):
    print(f"--- accept: {text}", flush=True)


def sign_in_link():
    result = subprocess.run([BINARY, "web"], capture_output=True, timeout=WAIT_SECONDS, check=False)
    links = [line for line in result.stdout.decode().splitlines() if line.startswith("http://")]
    assert result.returncode == 0 and links, f"memo-peer web printed no link: {result.stderr.decode()}"
    return links[0]


def listed_titles(driver):
    return [element.text for element in present(driver, ".memo-item .title")]


def report(driver):
    """What a failing page showed: a screenshot, its text, the console."""
    try:
        driver.save_screenshot(os.path.join(WORK, "accept-failure.png"))
        print(f"page at {driver.current_url}:\n{find(driver, 'body').text[:3000]}")
        for entry in driver.get_log("browser"):
            print("console:", entry.get("level"), entry.get("message"))
    except Exception:  # noqa: BLE001 (the failure itself matters, not this)
        pass


def accept(driver):
    notebook, titles = FIXTURES["notebook"], FIXTURES["titles"]
    step("sign in")
    link = sign_in_link()
    driver.get(link)
    wait(driver, lambda: driver.execute_script("return document.body.dataset.ready === 'true'"), "the page")
    assert not set(titles) & set(listed_titles(driver)), "the notebook's memos are here before the accept"
    driver.execute_script("window.__marker = 1;")

    step("press Accept on the invitation in the Devices view")
    click(driver, ".tab[data-view=devices]")
    click(driver, f".invitation-item[data-id='{notebook}'] button[data-action=accept]")
    wait(driver, lambda: not present(driver, f".invitation-item[data-id='{notebook}']"), "the invitation taken")

    step("the notebook's memos appear in the list without Sync and without a reload")
    click(driver, ".tab[data-view=memos]")
    wait(driver, lambda: set(titles) <= set(listed_titles(driver)), "the accepted notebook's memos in the list",
         seconds=ARRIVAL_SECONDS)
    assert driver.execute_script("return window.__marker === 1;"), "the page was loaded again"


def main():
    driver = start_chromium(
        f"{WORK}/profile", f"{WORK}/cache", f"{WORK}/chromedriver.log", {"browser": "ALL"})
    try:
        accept(driver)
        print("accept passed", flush=True)
    except BaseException:
        report(driver)
        raise
    finally:
        driver.quit()


def alarmed(_signal, _frame):
    raise AssertionError(f"the whole run took longer than {RUN_SECONDS} s")


if __name__ == "__main__":
    signal.signal(signal.SIGALRM, alarmed)
    signal.alarm(RUN_SECONDS)
    try:
        main()
    except AssertionError as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
