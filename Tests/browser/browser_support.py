"""What both browser tests (web_page_test.py, two_hosts_test.py) drive Debian's headless
chromium with: its start-up options, and waits and clicks that survive the page redrawing
an element meanwhile. Imported from the scripts' own folder (python puts it on the path)."""

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

WAIT_SECONDS = 20


def start_chromium(profile, cache, driver_log, logging):
    """Headless chromium with a profile and disk cache of its own, nothing that reaches out
    (no sync, updates, extensions or background networking), and the given log types."""
    options = Options()
    options.binary_location = "/usr/lib/chromium/chromium"
    for argument in [
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1180,820",
        f"--user-data-dir={profile}", f"--disk-cache-dir={cache}", "--no-first-run", "--no-default-browser-check",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
        "--disable-features=MediaRouter,Translate,OptimizationHints", "--password-store=basic", "--lang=en-US",
    ]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", logging)
    service = Service("/usr/bin/chromedriver", log_path=driver_log)
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(WAIT_SECONDS)
    return driver


def wait(driver, condition, what, seconds=WAIT_SECONDS):
    """Waits for `condition`, asking again when the page redrew an element meanwhile. It asks
    every 50 ms (selenium's default is 500 ms), so a measured wait is not rounded up by it."""

    def attempt(_):
        try:
            return condition()
        except StaleElementReferenceException:
            return False

    try:
        return WebDriverWait(
            driver, seconds, poll_frequency=0.05, ignored_exceptions=[StaleElementReferenceException]
        ).until(attempt)
    except TimeoutException:
        raise AssertionError(f"timed out after {seconds:.1f} s waiting for {what}") from None


def find(driver, css):
    return driver.find_element(By.CSS_SELECTOR, css)


def present(driver, css):
    return driver.find_elements(By.CSS_SELECTOR, css)


def click(driver, css):
    """Clicks the element once it is there, again if the page redrew it meanwhile."""

    def attempt():
        try:
            elements = present(driver, css)
            if not elements or not elements[0].is_enabled():
                return False
            elements[0].click()
            return True
        except StaleElementReferenceException:
            return False

    wait(driver, attempt, f"{css} to click")
