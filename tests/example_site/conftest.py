"""The example site's people and articles: who asks, and what they may read."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import Group, User

from tests.example_site.articles.models import MEMBERS_GROUP, Article, Category

QA_GROUP = "QA reviewers"  # created with its permissions by the answers app's migrations


@dataclass(frozen=True)
class Site:
    public: Article
    members: Article
    draft: Article
    member: User
    non_member: User
    staff: User
    reviewer: User


def make_user(name: str, *, groups: tuple[str, ...] = (), staff: bool = False) -> User:
    user = User.objects.create_user(name, password="pw-for-tests", is_staff=staff)
    for group in groups:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


@pytest.fixture
def site(django_capture_on_commit_callbacks) -> Site:
    """Three articles (public, members-only, a staff draft) indexed as their saves commit, and the askers."""
    members_area = Category.objects.create(name="Members' area", members_only=True)
    with django_capture_on_commit_callbacks(execute=True):
        public = Article.objects.create(
            title="Garden compost guide",
            slug="compost",
            published=True,
            body="# Compost\n\nA compost heap needs green and brown layers. "
            "Turn the compost heap every week so that it stays aerobic.",
        )
        members = Article.objects.create(
            title="Beekeeping handbook for members",
            slug="beekeeping",
            published=True,
            category=members_area,
            body="# Hive inspections\n\nBeekeeping members inspect the hive every nine days. "
            "A queen excluder keeps the queen in the brood box of the hive.",
        )
        draft = Article.objects.create(
            title="Orchard pruning plan",
            slug="pruning",
            staff_draft=True,
            body="# Pruning\n\nOrchard pruning happens in late winter. "
            "Cut the crossing branches of the apple trees first.",
        )
    return Site(
        public=public,
        members=members,
        draft=draft,
        member=make_user("member", groups=(MEMBERS_GROUP,)),
        non_member=make_user("nonmember"),
        staff=make_user("staff", staff=True),
        reviewer=make_user("reviewer", groups=(QA_GROUP,)),
    )
