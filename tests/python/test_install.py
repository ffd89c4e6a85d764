"""`cmake --install` puts the package where Debian's python3 finds it under the prefix, and the
installed package loads the installed libg4v.so (not the build tree's), also after the whole
prefix is moved elsewhere."""
import os
import shutil
import subprocess
import sys


BUILD = os.environ.get("G4V_BUILD_DIR")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "G4V_LIBRARY", "LD_LIBRARY_PATH")}
    env.update(extra)
    return env


PROBE = ("import sys, gemma4_vision as g; m = g.Model(sys.argv[1], threads=1); "
         "r = m.encode(bytes(open(sys.argv[2], 'rb').read()), tokens=70); "
         "print(g.__file__); print(g.library_path()); print(r.n_tokens)")


def test_cmake_install(tiny, tmp_path):
    assert BUILD and os.path.isdir(BUILD), "G4V_BUILD_DIR (set by CTest) is the build tree"
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", BUILD, "--prefix", str(prefix)], check=True,
                   capture_output=True)
    pkgs = [str(p.parent) for p in prefix.rglob("gemma4_vision/__init__.py")]
    assert len(pkgs) == 1, pkgs
    site = os.path.dirname(pkgs[0])
    ver = "python%d.%d" % sys.version_info[:2]
    assert site.endswith(os.path.join("lib", ver, "dist-packages")) or \
        site.endswith(os.path.join("lib", ver, "site-packages")), site
    png = tmp_path / "x.png"
    from PIL import Image
    Image.new("RGB", (100, 60), (10, 200, 30)).save(png)
    for where in ("installed", "moved"):
        if where == "moved":
            moved = tmp_path / "elsewhere"
            shutil.move(str(prefix), moved)
            site = site.replace(str(prefix), str(moved))
            prefix = moved
        r = subprocess.run([sys.executable, "-c", PROBE, tiny, str(png)],
                           env=clean_env(PYTHONPATH=site), capture_output=True, text=True,
                           cwd=str(tmp_path))
        assert r.returncode == 0, (where, r.stderr)
        pkg_file, lib, n = r.stdout.split()
        assert pkg_file.startswith(str(prefix)), (where, pkg_file)
        assert lib.startswith(str(prefix)) and os.path.exists(lib), (where, lib)
        assert int(n) > 0


def test_missing_library_is_a_clear_error_on_use(tmp_path):
    """Importing works without the library; the first use raises LibraryNotFoundError (a
    G4VError) naming the path tried and how to fix it."""
    code = ("import gemma4_vision as g\n"
            "try:\n    g.Model('x')\nexcept g.LibraryNotFoundError as e:\n"
            "    assert isinstance(e, g.G4VError) and e.status_name == 'G4V_ERR_IO'\n"
            "    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code],
                       env=clean_env(PYTHONPATH=os.environ["PYTHONPATH"],
                                     G4V_LIBRARY=str(tmp_path / "nolib.so")),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "cannot load libg4v" in r.stdout and "nolib.so" in r.stdout and \
        "G4V_LIBRARY" in r.stdout and "pip install" in r.stdout, r.stdout
    # no guessing: without G4V_LIBRARY a source checkout does not load ../build/libg4v.so
    r = subprocess.run([sys.executable, "-c", code],
                       env=clean_env(PYTHONPATH=os.environ["PYTHONPATH"]),
                       capture_output=True, text=True)
    assert r.returncode == 0 and "gemma4_vision/libg4v.so" in r.stdout, (r.stdout, r.stderr)


def test_installed_files(tmp_path):
    assert BUILD and os.path.isdir(BUILD)
    prefix = tmp_path / "p"
    subprocess.run(["cmake", "--install", BUILD, "--prefix", str(prefix)], check=True,
                   capture_output=True)
    pkg = [p.parent for p in prefix.rglob("gemma4_vision/__init__.py")][0]
    names = {p.name for p in pkg.iterdir()}
    assert {"py.typed", "_errors.py", "_paths.py", "model.py"} <= names, names
