"""Add an annotator account to the Label Studio of LABEL_STUDIO_BASE_DATA_DIR while sign-up is disabled.

Run by ``scripts/label_studio.sh add-user EMAIL`` with Label Studio's own Python
(.label-studio-venv): the same model calls Label Studio's CLI makes for its
admin, without the admin rights. The password comes from the environment
(LABEL_STUDIO_NEW_USER_PASSWORD), never the command line. Works with the server
running or stopped; the server must have started once (it creates the
organization with the admin).
"""

import os
import sys
from pathlib import Path

import label_studio


def main(email: str) -> int:
    sys.path.insert(0, str(Path(label_studio.__file__).parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "label_studio.core.settings.label_studio")
    import django

    django.setup()
    from organizations.models import Organization
    from users.models import User

    org = Organization.objects.first()
    if org is None:
        print(
            f"no organization in {os.environ['LABEL_STUDIO_BASE_DATA_DIR']}: start the server once first",
            file=sys.stderr,
        )
        return 1
    if User.objects.filter(email=email).exists():
        print(f"{email} already has an account", file=sys.stderr)
        return 1
    user = User.objects.create_user(email=email, password=os.environ["LABEL_STUDIO_NEW_USER_PASSWORD"])
    org.add_user(user)
    user.active_organization = org
    user.save(update_fields=["active_organization"])
    print(f"added {email} (user id {user.id}) to the organization {org.title!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
