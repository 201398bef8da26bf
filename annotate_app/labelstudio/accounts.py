"""Scripted Label Studio annotators, for integration tests and the benchmark.

A real annotator signs up in Label Studio's web form, takes the next task of a project from
``/api/projects/{id}/next`` (Label Studio's own queue, honouring ``maximum_annotations``) and submits a
result. These helpers do the same over HTTP, so a test exercises the path people use. The signup
form and ``/next`` are not in label-studio-sdk, hence plain httpx here; submitting goes through the SDK.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from label_studio_sdk import LabelStudio
from prefkit.schemas.common import PrefkitError


class SignupError(PrefkitError):
    """Label Studio refused the signup (signup closed, weak password, email taken)."""


def _login_session(url: str, email: str, password: str, path: str) -> httpx.Client:
    """A cookie session after submitting the signup or login form at ``path``."""
    session = httpx.Client(base_url=url, follow_redirects=True, timeout=60)
    session.get(path)
    csrf = session.cookies.get("csrftoken", "")
    resp = session.post(
        path,
        data={"csrfmiddlewaretoken": csrf, "email": email, "password": password},
        headers={"Referer": f"{url}{path}"},
    )
    if resp.status_code >= 400 or "sessionid" not in session.cookies:
        session.close()
        raise SignupError(f"{path} for {email} failed: HTTP {resp.status_code}")
    return session


@dataclass
class Annotator:
    """A Label Studio user acting through the API with their own token."""

    url: str
    email: str
    token: str
    user_id: int

    @property
    def client(self) -> LabelStudio:
        return LabelStudio(base_url=self.url, api_key=self.token, timeout=120)

    def next_task(self, project_id: int) -> dict[str, Any] | None:
        """The task Label Studio's queue serves this user next, or None when nothing is left."""
        resp = httpx.get(
            f"{self.url}/api/projects/{project_id}/next",
            headers={"Authorization": f"Token {self.token}"},
            timeout=120,
        )
        if resp.status_code == 404:
            return None
        resp.raise_for_status()
        return resp.json()

    def submit(
        self, task_id: int, result: list[dict[str, Any]], lead_time: float, cancelled: bool = False
    ) -> int:
        """Create an annotation as this user; returns its id."""
        ann = self.client.annotations.create(
            task_id, result=result, lead_time=lead_time, was_cancelled=cancelled
        )
        return int(ann.id)


def _as_annotator(url: str, email: str, session: httpx.Client) -> Annotator:
    try:
        token = session.get("/api/current-user/token").raise_for_status().json()["token"]
        me = session.get("/api/current-user/whoami").raise_for_status().json()
    finally:
        session.close()
    return Annotator(url=url.rstrip("/"), email=email, token=token, user_id=int(me["id"]))


def signup(url: str, email: str, password: str) -> Annotator:
    """Sign a new user up through Label Studio's web form and return them with their API token."""
    return _as_annotator(url, email, _login_session(url.rstrip("/"), email, password, "/user/signup/"))


def login(url: str, email: str, password: str) -> Annotator:
    """An existing user, signed in through the web form, with their API token."""
    return _as_annotator(url, email, _login_session(url.rstrip("/"), email, password, "/user/login/"))
