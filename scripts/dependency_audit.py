#!/usr/bin/python3
"""The dependency audit behind scripts/check-deps.sh.

Every system header a build compiled against (Ninja's dependency log) and every shared library its
executables load (ldd) must come from a Debian package that scripts/install-deps.sh lists, or that one
of those pulls in through Depends and Pre-Depends, or from Debian's base system (Essential or
Priority: required, which every Debian root has). Anything else worked only because it happened to be
installed on this machine, and would break a fresh one.

It reads only dpkg's database, Ninja's log and ldd: no network, a few seconds.
"""

import argparse
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

DPKG_STATUS = Path("/var/lib/dpkg/status")
DPKG_INFO = Path("/var/lib/dpkg/info")
LIST_SCRIPT = "scripts/install-deps.sh"


class AuditError(Exception):
    """A problem that stops the audit before it can judge anything (exit 2)."""


def bare_name(package):
    """'libc6:amd64' -> 'libc6'."""
    return package.split(":", 1)[0]


def read_installed_packages():
    """Installed packages from dpkg's status file: name -> fields."""
    packages = {}
    for stanza in DPKG_STATUS.read_text(encoding="utf-8", errors="replace").split("\n\n"):
        fields = {}
        current = None
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") and current:
                fields[current] += " " + line.strip()
            elif ":" in line:
                current, value = line.split(":", 1)
                fields[current] = value.strip()
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            packages[fields["Package"]] = fields
    return packages


def relation_alternatives(field):
    """'a (>= 1) | b:any, c' -> [['a', 'b'], ['c']]."""
    clauses = []
    for clause in field.split(","):
        names = []
        for alternative in clause.split("|"):
            name = re.sub(r"\(.*?\)|\[.*?\]|<.*?>", "", alternative).strip()
            if name:
                names.append(bare_name(name))
        if names:
            clauses.append(names)
    return clauses


def installed_providers(packages):
    """virtual name -> installed packages that provide it."""
    providers = defaultdict(set)
    for name, fields in packages.items():
        for clause in relation_alternatives(fields.get("Provides", "")):
            for virtual in clause:
                providers[virtual].add(name)
    return providers


def closure(roots, packages, providers):
    """Every installed package that installing `roots` pulls in. For `a | b` apt installs the first
    alternative it can, so the first one installed here stands for the clause."""
    seen = set()
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in seen or name not in packages:
            continue
        seen.add(name)
        fields = packages[name]
        for field in ("Pre-Depends", "Depends"):
            for clause in relation_alternatives(fields.get(field, "")):
                for alternative in clause:
                    satisfying = ({alternative} if alternative in packages else set()) | providers.get(alternative, set())
                    if satisfying:
                        pending.extend(sorted(satisfying))
                        break
    return seen


def file_owners():
    """path -> packages that ship it, from dpkg's file lists."""
    owners = defaultdict(set)
    for listing in DPKG_INFO.glob("*.list"):
        package = bare_name(listing.name[: -len(".list")])
        for line in listing.read_text(encoding="utf-8", errors="replace").splitlines():
            if line:
                owners[line].add(package)
    return owners


def spellings(path):
    """The names under which dpkg may know a file: as given, with links resolved, and on either side
    of the merged /usr (dpkg's lists still say /lib where the system says /usr/lib, and back)."""
    names = []
    for candidate in (os.path.normpath(path), os.path.realpath(path)):
        names.append(candidate)
        for top in ("/lib", "/lib64", "/bin", "/sbin"):
            if candidate.startswith(top + "/"):
                names.append("/usr" + candidate)
            elif candidate.startswith("/usr" + top + "/"):
                names.append(candidate[len("/usr"):])
    return list(dict.fromkeys(names))


def system_headers(build_dir, project_dirs):
    """Headers outside the project that Ninja recorded as dependencies of the build's objects."""
    if not (build_dir / "build.ninja").is_file():
        raise AuditError(f"{build_dir} is not a Ninja build directory (no build.ninja); configure it with a preset first")
    result = subprocess.run(["ninja", "-C", str(build_dir), "-t", "deps"], capture_output=True, text=True)
    if result.returncode != 0:
        raise AuditError(f"'ninja -t deps' failed in {build_dir}: {result.stderr.strip()}")
    headers = set()
    for line in result.stdout.splitlines():
        if not line.startswith((" ", "\t")):
            continue
        path = os.path.normpath(os.path.join(build_dir, line.strip()))
        if not any(path == d or path.startswith(d + os.sep) for d in project_dirs):
            headers.add(path)
    if not result.stdout.strip():
        raise AuditError(f"Ninja has no dependency log in {build_dir}: build it before auditing")
    return headers


def built_executables(build_dir):
    executables = []
    for root, dirs, files in os.walk(build_dir):
        dirs[:] = [d for d in dirs if d != "CMakeFiles"]
        for name in files:
            path = Path(root) / name
            if not os.access(path, os.X_OK) or path.is_symlink():
                continue
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    executables.append(path)
    return sorted(executables)


def loaded_libraries(executable):
    """(library path or None, soname) pairs from ldd; None where ldd finds no file."""
    result = subprocess.run(["ldd", str(executable)], capture_output=True, text=True)
    libraries = []
    for line in result.stdout.splitlines():
        line = line.strip()
        if "=>" in line:
            soname, target = (part.strip() for part in line.split("=>", 1))
            if target.startswith("not found"):
                libraries.append((None, soname))
            else:
                libraries.append((target.split(" (", 1)[0], soname))
        elif line.startswith("/"):
            libraries.append((line.split(" (", 1)[0], os.path.basename(line.split(" ", 1)[0])))
    return libraries


def listed_packages(source_dir):
    script = source_dir / LIST_SCRIPT
    result = subprocess.run(["bash", str(script), "--list"], capture_output=True, text=True)
    if result.returncode != 0 or not result.stdout.strip():
        raise AuditError(f"'{script} --list' printed no packages: {result.stderr.strip()}")
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]


def audit(repository, source_dir, build_dir, without):
    listed = [p for p in listed_packages(repository) if p not in without]
    packages = read_installed_packages()
    not_installed = [p for p in listed if p not in packages]
    if not_installed:
        raise AuditError(f"packages listed in {LIST_SCRIPT} are not installed: {' '.join(not_installed)}; "
                         f"run {LIST_SCRIPT} first")
    providers = installed_providers(packages)
    base = {name for name, fields in packages.items()
            if fields.get("Essential") == "yes" or fields.get("Priority") == "required"}
    pulled_in = closure(listed, packages, providers)
    allowed = pulled_in | closure(base, packages, providers)
    owners = file_owners()

    project_dirs = sorted({os.path.realpath(source_dir), os.path.normpath(source_dir),
                           os.path.realpath(build_dir), os.path.normpath(build_dir)})
    files = {path: "header" for path in system_headers(build_dir, project_dirs)}
    executables = built_executables(build_dir)
    unresolved = []
    for executable in executables:
        for library, soname in loaded_libraries(executable):
            if library is None:
                unresolved.append(f"{executable.relative_to(build_dir)} loads {soname}, which ldd cannot find")
            elif library not in files:
                files[library] = "library"

    unowned = []
    foreign = defaultdict(list)          # package -> files it provides that nothing listed pulls in
    used_packages = set()
    for path, kind in sorted(files.items()):
        shipped_by = set()
        for name in spellings(path):
            shipped_by |= owners.get(name, set())
        if not shipped_by:
            unowned.append(f"{kind} {path} belongs to no Debian package (installed by hand?)")
        elif shipped_by & allowed:
            used_packages |= shipped_by & allowed
        else:
            for package in sorted(shipped_by):
                foreign[package].append(f"{kind} {path}")

    problems = unresolved + unowned
    for package, paths in sorted(foreign.items()):
        shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
        problems.append(f"{shown}: from package {package}, which {LIST_SCRIPT} neither lists nor pulls in; "
                        f"add {package} to {LIST_SCRIPT}")
    headers = sum(1 for kind in files.values() if kind == "header")
    return problems, headers, len(files) - headers, len(executables), len(used_packages), len(listed)


def main():
    parser = argparse.ArgumentParser(prog="check-deps.sh", description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default="build/ci", help="a built Ninja build directory (default build/ci)")
    parser.add_argument("--source-dir", default=None, help="the project whose headers are not audited "
                        "(default: this repository)")
    parser.add_argument("--without", action="append", default=[], metavar="PACKAGE",
                        help="audit as if PACKAGE were not in the list (to see what depends on it)")
    args = parser.parse_args()
    repository = Path(__file__).resolve().parent.parent
    source_dir = Path(args.source_dir).resolve() if args.source_dir else repository
    build_dir = Path(args.build_dir)
    if not build_dir.is_absolute():
        build_dir = (Path.cwd() / build_dir)
    build_dir = Path(os.path.normpath(build_dir))
    os.chdir(repository)
    try:
        problems, headers, libraries, executables, used, listed = audit(repository, source_dir, build_dir, set(args.without))
    except AuditError as error:
        print(f"check-deps: {error}", file=sys.stderr)
        return 2
    if problems:
        for problem in problems:
            print(f"check-deps: {problem}", file=sys.stderr)
        print(f"check-deps: FAILED: {len(problems)} problem(s) in {build_dir}", file=sys.stderr)
        return 1
    print(f"check-deps: {headers} system headers and {libraries} shared libraries of {executables} executables "
          f"in {build_dir} come from {used} Debian packages, all installed by {LIST_SCRIPT} "
          f"({listed} listed, with what they pull in)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
