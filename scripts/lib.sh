# Shared by scripts/test and scripts/demo: find or install what mesh needs.
# Debian packages are installed when running as root; otherwise we say what
# to install and stop.

# Prints the folder holding PostgreSQL's server binaries (initdb, pg_ctl), if any.
pg_bindir() {
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return 0
  fi
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$dir" ] && [ -x "$dir/initdb" ] && echo "$dir"
}

nats_bin() {
  command -v nats-server 2>/dev/null || { [ -x /usr/sbin/nats-server ] && echo /usr/sbin/nats-server; }
}

# Installs the Debian packages given after `who` when root with apt (the
# package lists updated only when an install fails: they are often fresh);
# otherwise says what `who` needs and how to install it, and exits 1.
apt_install() {
  local who="$1"
  shift
  [ $# -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing $* (Debian packages)" >&2
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2; then
      DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
    fi
  else
    echo "$who: these Debian packages are missing: $*" >&2
    echo "install them with: sudo apt-get install --no-install-recommends $*" >&2
    exit 1
  fi
}

# Installs nats-server, PostgreSQL, Redis and jq when missing (root), or says what to install.
ensure_services() {
  local missing=()
  [ -n "$(nats_bin)" ] || missing+=(nats-server)
  [ -n "$(pg_bindir)" ] || missing+=(postgresql)
  command -v runuser >/dev/null 2>&1 || missing+=(util-linux)
  # mesh-grants' tests make network namespaces and veth pairs with `ip`.
  command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || missing+=(iproute2)
  # mesh-provide's example hook (examples/hooks/redis-acl.sh) and its tests: Redis, jq.
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server); command -v jq >/dev/null 2>&1 || missing+=(jq)
  apt_install mesh "${missing[@]}"
}

# What the example hooks (examples/hooks) and their tests run on: Redis
# (redis-server, redis-cli), Node.js 20 or newer with npm, and Python 3.
# Installed when root with apt, else it says what to install.
ensure_hook_tools() {
  local missing=()
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  command -v python3 >/dev/null 2>&1 || missing+=(python3)
  command -v jq >/dev/null 2>&1 || missing+=(jq)
  apt_install "the example hooks" "${missing[@]}"
  # The system's own Redis service is the system's to start: the tests run
  # private ones on free ports.
  local major
  major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  if [ "$major" -lt 20 ]; then
    echo "the node hooks (examples/hooks/redis-acl.mjs, on kits/typescript) need Node.js 20 or newer; this one is $(node --version 2>/dev/null)" >&2
    return 1
  fi
}

# Makes the node hook (examples/hooks/redis-acl.mjs) runnable: the
# TypeScript kit it is written on built (kits/typescript: npm ci, npm run
# build), then its npm dependencies (examples/hooks/package-lock.json:
# @redis/client, and the kit linked) installed with `npm ci`, each when
# missing or stale. When npm cannot (no network, no registry), it says so
# and returns 1: the tests of the node hook then fail, or say SKIPPED unless
# MESH_REQUIRE_NODE_HOOKS is set.
ensure_node_hooks() {
  kit_npm_build kits/typescript dist/index.js || return 1
  kit_npm_build examples/hooks || return 1
}

# The TypeScript hook kit (kits/typescript) and its MariaDB example
# (examples/hooks/mariadb): mariadb-server for the example's tests (installed
# when root), then `npm ci` and `npm run build` (tsc --strict, chmod +x of
# the entry files) in each when missing or stale. Returns 1 when one cannot
# be had (tests/kit_typescript.rs then says SKIPPED, or fails under
# MESH_REQUIRE_KITS).
ensure_kit_typescript() {
  if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
    if [ "$(id -u)" -eq 0 ]; then
      apt_install "the TypeScript kit's example" mariadb-server mariadb-client
    else
      echo "typescript kit: mariadbd is missing: sudo apt-get install --no-install-recommends mariadb-server" >&2
      return 1
    fi
  fi
  # The package's own MariaDB service is the system's: the tests run private ones.
  kit_npm_build kits/typescript dist/index.js || return 1
  kit_npm_build examples/hooks/mariadb dist/mariadb.js kits/typescript/dist || return 1
}

# `npm ci` in $1 when its node_modules is missing or older than its lock,
# then, when a build output $2 is given, `npm run build` when $1/$2 is
# missing or older than its sources (or any further path given).
kit_npm_build() {
  local dir="$1" out="${2:+$1/$2}"
  shift $(($# < 2 ? $# : 2))
  if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    echo "$dir: npm ci" >&2
    if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2); then
      echo "$dir: npm ci failed (no network, or no npm registry?)" >&2
      return 1
    fi
  fi
  [ -n "$out" ] || return 0
  if [ ! -e "$out" ] || [ -n "$(find "$dir/src" "$dir/tsconfig.json" "$dir/package.json" "$dir/node_modules/.package-lock.json" "$@" -newer "$out" -print -quit 2>/dev/null)" ]; then
    echo "$dir: npm run build" >&2
    if ! (cd "$dir" && npm run build --silent >&2); then
      echo "$dir: the build failed" >&2
      return 1
    fi
  fi
}

# The Go hook kit (kits/go) and its RabbitMQ example (examples/hooks/rabbitmq):
# rabbitmq-server for the example's tests (installed when root), and Go: the
# one on PATH or in /usr/local/go/bin (put on PATH), else Debian's golang-go
# (installed when root). tests/kit_go.rs builds the example itself (go build)
# and says SKIPPED without them, or fails under MESH_REQUIRE_KITS. Returns 1
# when one cannot be had.
ensure_kit_go() {
  local missing=()
  [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || missing+=(rabbitmq-server)
  if ! command -v go >/dev/null 2>&1; then
    if [ -x /usr/local/go/bin/go ]; then
      export PATH="$PATH:/usr/local/go/bin"
    else
      missing+=(golang-go)
    fi
  fi
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "go kit: missing: sudo apt-get install --no-install-recommends ${missing[*]}" >&2
    return 1
  fi
  # The package's own RabbitMQ service is the system's: the tests run private nodes.
  (apt_install "the Go kit's example" "${missing[@]}") || return 1
}

# Headless Chromium and its WebDriver server, for the web console's tests
# (test-support's Browser starts chromedriver on a free port, which starts
# chromium): Debian's chromium and chromium-driver (installed when root).
# Without them the browser tests say SKIPPED, or fail under
# MESH_REQUIRE_BROWSER. Returns 1 when they cannot be had.
ensure_browser() {
  local missing=()
  command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || missing+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || [ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
  [ ${#missing[@]} -eq 0 ] && { ensure_axe; return; }
  if [ "$(id -u)" -ne 0 ]; then
    echo "browser: missing: sudo apt-get install --no-install-recommends ${missing[*]}" >&2
    return 1
  fi
  (apt_install "the browser tests" "${missing[@]}") || return 1
  ensure_axe
}

# axe-core (test-support/axe/package-lock.json), which the console's browser
# tests run inside Chromium: `npm ci` when it is missing or older than the
# lock. Returns 1 when npm cannot (the accessibility checks then say
# SKIPPED, or fail under MESH_REQUIRE_BROWSER).
ensure_axe() {
  local dir=test-support/axe
  if [ -f "$dir/node_modules/.package-lock.json" ] && [ ! "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    return 0
  fi
  echo "axe-core: npm ci in $dir" >&2
  if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2); then
    echo "axe-core: npm ci failed in $dir (no network, or no npm registry?)" >&2
    return 1
  fi
}

ensure_cargo() {
  if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
  fi
  if ! command -v cargo >/dev/null 2>&1; then
    echo "mesh needs a Rust toolchain (cargo); install it with rustup: https://rustup.rs" >&2
    exit 1
  fi
}

# The Keycloak server the identity provider's live tests start (a zip from
# Maven Central, run from a cache folder outside the repo).
MESH_KEYCLOAK_VERSION=26.5.6
# Java feature versions Keycloak $MESH_KEYCLOAK_VERSION runs on, preferred first.
MESH_KEYCLOAK_JAVA_VERSIONS="21 25 17"
# The build options every mesh Keycloak runs with (test-support reads the
# same words from the distribution's .mesh-build file).
MESH_KEYCLOAK_BUILD="--db=postgres --health-enabled=true"

# The Java feature version of the JDK at $1 (from its `release` file), if any.
jdk_feature_version() {
  [ -x "$1/bin/java" ] && [ -f "$1/release" ] || return 0
  sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$1/release"
}

# Prints a JDK folder Keycloak supports: $MESH_KEYCLOAK_JAVA_HOME as given,
# else the first of /usr/lib/jvm/* and $JAVA_HOME in the preferred versions.
keycloak_java_home() {
  if [ -n "${MESH_KEYCLOAK_JAVA_HOME:-}" ]; then
    echo "$MESH_KEYCLOAK_JAVA_HOME"
    return 0
  fi
  local want dir
  for want in $MESH_KEYCLOAK_JAVA_VERSIONS; do
    for dir in ${JAVA_HOME:-} /usr/lib/jvm/*; do
      [ -L "$dir" ] && continue
      if [ "$(jdk_feature_version "$dir")" = "$want" ]; then
        echo "$dir"
        return 0
      fi
    done
  done
}

# Whether the build the distribution at $1 holds now is for PostgreSQL (the
# options its last `kc.sh build`, or a command that rebuilt it, persisted);
# true when unzip is missing to read them.
keycloak_built_for_postgres() {
  command -v unzip >/dev/null 2>&1 || return 0
  unzip -p "$1/lib/quarkus/generated-bytecode.jar" META-INF/keycloak-persisted.properties 2>/dev/null |
    tr -d '\r' | grep -qx 'kc.db=postgres'
}

# Finds or fetches the Keycloak distribution and a JDK for it, and exports
# MESH_KEYCLOAK_HOME and MESH_KEYCLOAK_JAVA_HOME for the tests. The zip is
# fetched once with Maven into ${XDG_CACHE_HOME:-~/.cache}/mesh/keycloak and
# unpacked there. When it cannot (no Maven, no JDK, no network), it says
# what is missing and returns 1: the live tests then say they were skipped.
ensure_keycloak() {
  local cache="${XDG_CACHE_HOME:-$HOME/.cache}/mesh/keycloak"
  local home="$cache/keycloak-$MESH_KEYCLOAK_VERSION"
  local java_home
  java_home=$(keycloak_java_home)
  if [ -z "$java_home" ] || [ ! -x "$java_home/bin/java" ]; then
    echo "keycloak: no JDK it runs on (Java $MESH_KEYCLOAK_JAVA_VERSIONS) under /usr/lib/jvm or \$JAVA_HOME;" \
      "install one (apt-get install openjdk-17-jdk-headless) or set MESH_KEYCLOAK_JAVA_HOME" >&2
    return 1
  fi
  if [ -n "${MESH_KEYCLOAK_HOME:-}" ]; then
    home="$MESH_KEYCLOAK_HOME"
  elif [ ! -x "$home/bin/kc.sh" ]; then
    if ! command -v mvn >/dev/null 2>&1; then
      echo "keycloak: Maven (mvn) is needed once to fetch org.keycloak:keycloak-quarkus-dist:$MESH_KEYCLOAK_VERSION;" \
        "install it (apt-get install maven) or set MESH_KEYCLOAK_HOME to an unpacked Keycloak" >&2
      return 1
    fi
    if ! command -v unzip >/dev/null 2>&1; then
      echo "keycloak: unzip is needed to unpack the distribution (apt-get install unzip)" >&2
      return 1
    fi
    echo "keycloak: fetching keycloak-quarkus-dist $MESH_KEYCLOAK_VERSION with Maven into $cache" >&2
    mkdir -p "$cache"
    local zip="$cache/keycloak-quarkus-dist-$MESH_KEYCLOAK_VERSION.zip"
    if ! mvn -q dependency:copy \
      -Dartifact="org.keycloak:keycloak-quarkus-dist:$MESH_KEYCLOAK_VERSION:zip" \
      -DoutputDirectory="$cache" >&2 || [ ! -f "$zip" ]; then
      echo "keycloak: Maven could not fetch org.keycloak:keycloak-quarkus-dist:$MESH_KEYCLOAK_VERSION:zip" \
        "(no network or no Maven Central?)" >&2
      return 1
    fi
    # Unpacked beside, then moved: an interrupted unzip never looks complete.
    rm -rf "$home.partial"
    mkdir -p "$home.partial"
    unzip -q "$zip" -d "$home.partial" >&2
    mv "$home.partial/keycloak-$MESH_KEYCLOAK_VERSION" "$home"
    rm -rf "$home.partial" "$zip"
  fi
  if [ ! -x "$home/bin/kc.sh" ]; then
    echo "keycloak: $home/bin/kc.sh is missing (MESH_KEYCLOAK_HOME names no unpacked Keycloak)" >&2
    return 1
  fi
  # Built once for PostgreSQL, so servers start with --optimized and
  # `kc.sh bootstrap-admin --optimized` can run beside a live one. Built
  # again when something rebuilt it for another database since (the marker
  # cannot tell).
  local again=""
  if [ "$(cat "$home/.mesh-build" 2>/dev/null)" = "$MESH_KEYCLOAK_BUILD" ] && ! keycloak_built_for_postgres "$home"; then
    echo "keycloak: $home was rebuilt for another database since it was built for mesh" \
      "(kc.sh start-dev, or a kc.sh command without --optimized, rebuilds it so)" >&2
    again=yes
  fi
  if [ -n "$again" ] || [ "$(cat "$home/.mesh-build" 2>/dev/null)" != "$MESH_KEYCLOAK_BUILD" ]; then
    echo "keycloak: kc.sh build $MESH_KEYCLOAK_BUILD (once)" >&2
    # shellcheck disable=SC2086 # the options are words
    if ! JAVA_HOME="$java_home" "$home/bin/kc.sh" build $MESH_KEYCLOAK_BUILD >"$home/.mesh-build.log" 2>&1; then
      echo "keycloak: kc.sh build failed; its output is in $home/.mesh-build.log" >&2
      return 1
    fi
    echo "$MESH_KEYCLOAK_BUILD" >"$home/.mesh-build"
  fi
  export MESH_KEYCLOAK_HOME="$home" MESH_KEYCLOAK_JAVA_HOME="$java_home"
  echo "keycloak: $MESH_KEYCLOAK_HOME on $MESH_KEYCLOAK_JAVA_HOME" >&2
}

# The tools scripts/test checks the deployment and monitoring kits with:
# promtool (Debian package prometheus, installed without its recommends; as
# with postgresql, the package's own service is the system's to start),
# systemd-analyze (systemd) and dpkg-deb (dpkg). Installed when root with apt,
# else it says what to install.
ensure_ops_tools() {
  local missing=()
  command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
  command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
  command -v dpkg-deb >/dev/null 2>&1 || missing+=(dpkg)
  apt_install "scripts/test (promtool is in the package prometheus)" "${missing[@]}"
}

# Runs systemd-analyze verify on unit files, failing on any word it says
# (it exits 0 after warning of an unknown key).
verify_units() {
  local said
  if ! said=$(systemd-analyze verify "$@" 2>&1) || [ -n "$said" ]; then
    echo "systemd-analyze verify $*:" >&2
    echo "$said" >&2
    return 1
  fi
}

# The units in deploy/systemd, verified before any package: each with its
# binary at the path the build left it (systemd-analyze wants ExecStart to
# exist), the templates as an instance.
check_units() {
  local bin_dir="$1" dir unit name
  dir=$(mktemp -d)
  for unit in deploy/systemd/*.service; do
    name=$(basename "$unit")
    name=${name/@./@example.}
    sed "s|/usr/bin/|$bin_dir/|" "$unit" >"$dir/$name"
  done
  verify_units "$dir"/*.service || { rm -rf "$dir"; return 1; }
  rm -rf "$dir"
}

# Every MESH_ variable the example settings name is one the binary takes
# (clap ignores an unknown variable, so a typo would be silently dropped).
check_env_examples() {
  local bin_dir="$1" file help var bad=0
  for file in deploy/env/*; do
    case "$(basename "$file")" in
      mesh-console*) help=$("$bin_dir/mesh-console" --help) ;;
      mesh-controller*) help=$("$bin_dir/mesh-controller" serve --help) ;;
      mesh-postgres*) help=$("$bin_dir/mesh-postgres" --help) ;;
      mesh-identity*) help=$("$bin_dir/mesh-identity" --help) ;;
      mesh-grants*) help=$("$bin_dir/mesh-grants" --help) ;;
      mesh-provide*) help=$("$bin_dir/mesh-provide" --help) ;;
      *) echo "$file: no binary known for it" >&2; return 1 ;;
    esac
    for var in $(grep -o '^#\{0,1\}MESH_[A-Z_]*=' "$file" | tr -d '#='); do
      if ! grep -q "env: $var\b" <<<"$help"; then
        echo "$file: $var is not a variable of its binary" >&2
        bad=1
      fi
    done
  done
  return $bad
}

# The files a mesh package must hold.
MESH_PACKAGE_FILES="
/usr/bin/mesh-controller
/usr/bin/mesh-console
/usr/bin/mesh-postgres
/usr/bin/mesh-identity
/usr/bin/mesh-grants
/usr/bin/mesh-provide
/lib/systemd/system/mesh-controller.service
/lib/systemd/system/mesh-console.service
/lib/systemd/system/mesh-postgres@.service
/lib/systemd/system/mesh-identity@.service
/lib/systemd/system/mesh-grants.service
/lib/systemd/system/mesh-provide@.service
/etc/mesh/mesh-controller.env
/etc/mesh/mesh-console.env
/etc/mesh/mesh-grants.env
/etc/mesh/mesh-postgres@.env.example
/etc/mesh/mesh-identity@.env.example
/etc/mesh/mesh-provide@.env.example
/usr/lib/mesh/hooks/redis-acl.sh
/usr/lib/mesh/hooks/redis-acl.mjs
/usr/lib/mesh/hooks/redis-acl.py
/usr/lib/mesh/hooks/mesh_hook.py
/usr/lib/mesh/hooks/package.json
/usr/lib/mesh/hooks/package-lock.json
/usr/share/mesh/kits/python/mesh_hook.py
/usr/share/mesh/kits/go/go.mod
/usr/share/mesh/kits/go/serve.go
/usr/share/mesh/kits/typescript/src/protocol.ts
/usr/share/mesh/examples/hooks/rabbitmq/main.go
/usr/share/mesh/examples/hooks/mariadb/src/mariadb.ts
/usr/share/doc/mesh/copyright
/usr/share/doc/mesh/docs/hooks.md
/usr/share/doc/mesh/docs/operating.md
/usr/share/doc/mesh/docs/contracts/README.md
/usr/share/doc/mesh/docs/kits/go.md
/usr/share/doc/mesh/examples/prometheus/mesh.rules.yml
/usr/share/doc/mesh/examples/grafana/mesh.json
"
# Each binary's man page and shell completions (scripts/package's BINARIES).
for bin in mesh-controller mesh-console mesh-postgres mesh-identity mesh-grants mesh-provide; do
  MESH_PACKAGE_FILES+="/usr/share/man/man1/$bin.1.gz
/usr/share/bash-completion/completions/$bin
/usr/share/zsh/vendor-completions/_$bin
/usr/share/fish/vendor_completions.d/$bin.fish
"
done
MESH_PACKAGE_FILES+="/usr/share/man/man1/mesh-controller-status.1.gz
/usr/share/man/man1/mesh-provide-conform.1.gz
"

# Reads every man page of the package `deb` with man (or mandoc -T lint when
# installed): each must render with no warning.
check_man_pages() {
  local deb="$1" dir page said bad=0
  dir=$(mktemp -d)
  dpkg-deb -x "$deb" "$dir"
  for page in "$dir"/usr/share/man/man1/*.1.gz; do
    if command -v mandoc >/dev/null 2>&1; then
      said=$(zcat "$page" | mandoc -T lint -W warning 2>&1) || true
    elif command -v man >/dev/null 2>&1; then
      said=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) || said="man -l failed"
      MANWIDTH=80 man -l "$page" 2>/dev/null | grep -q "^NAME" || said="$said (no NAME section)"
    else
      echo "neither mandoc nor man is installed: the man pages were not read" >&2
      break
    fi
    if [ -n "$said" ]; then
      echo "$(basename "$page"): $said" >&2
      bad=1
    fi
  done
  rm -rf "$dir"
  return $bad
}

# The instance each template unit is checked as (as docs/operating.md's
# examples name them).
unit_instance() {
  case "$1" in
    mesh-postgres@.service) echo "mesh-postgres@db-1.service" ;;
    mesh-identity@.service) echo "mesh-identity@id-1.service" ;;
    mesh-provide@.service) echo "mesh-provide@cache-1.service" ;;
    *) echo "$1" ;;
  esac
}

# docs/operating.md (or `doc`) against the package `deb`: every path of its
# package table ("| path | what |") is one the .deb holds (a folder: one it
# holds files under); every file of its secrets table ("| unit | credential
# | file") is a LoadCredential= source of the units the .deb holds, and
# every such source is in that table; every ExecStart= binary and
# EnvironmentFile= of those units (templates as the doc's instances) is
# named in the doc and, for a binary, in the .deb. Needs no root.
check_operating_paths() {
  local deb="$1" doc="${2:-docs/operating.md}" listed dir bad=0 path unit file instance name
  listed=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\.||')
  table_paths() {
    # The table's first column, for the package table; its third, for the secrets table.
    awk -F'|' -v head="$1" -v column="$2" 'index($0, head) == 1 {on = 1; next}
      on && !/^\|/ {on = 0} on {print $(column + 1)}' "$doc" |
      grep -o '`/[^` ]*`' | tr -d '`' | sort -u
  }
  local package_paths secret_paths
  package_paths=$(table_paths "| path | what |" 1)
  [ -n "$package_paths" ] || { echo "$doc: no package table (| path | what |)" >&2; return 1; }
  for path in $package_paths; do
    case "$path" in
      */) grep -q "^${path}." <<<"$listed" || { echo "$doc names $path, but $deb holds nothing in it" >&2; bad=1; } ;;
      *) grep -qxF "$path" <<<"$listed" || { echo "$doc names $path, but $deb does not hold it" >&2; bad=1; } ;;
    esac
  done
  for path in $(grep -x '/usr/bin/[^/]\+' <<<"$listed"); do
    grep -qxF "$path" <<<"$package_paths" || { echo "$deb holds $path, which $doc's package table does not name" >&2; bad=1; }
  done
  dir=$(mktemp -d)
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir" ./lib/systemd/system
  local loaded=""
  for file in "$dir"/lib/systemd/system/*.service; do
    name=$(basename "$file")
    instance=$(unit_instance "$name")
    local i=${instance#*@}
    i=${i%.service}
    [ "$i" = "$instance" ] && i=""
    for path in $(sed -n 's/^LoadCredential=[^:]*://p' "$file" | sed "s|%i|$i|g"); do
      loaded+="$path"$'\n'
    done
    for path in $(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p; s/^EnvironmentFile=-\{0,1\}//p' "$file" | sed "s|%i|$i|g"); do
      grep -qF "$path" "$doc" || { echo "$name ($instance): $path is not named in $doc" >&2; bad=1; }
      case "$path" in /usr/bin/*)
        grep -qxF "$path" <<<"$listed" || { echo "$name runs $path, which $deb does not hold" >&2; bad=1; } ;;
      esac
    done
  done
  rm -rf "$dir"
  secret_paths=$(table_paths "| unit | credential | file" 3)
  [ -n "$secret_paths" ] || { echo "$doc: no secrets table (| unit | credential | file)" >&2; bad=1; }
  for path in $secret_paths; do
    grep -qxF "$path" <<<"$loaded" || { echo "$doc's secrets table names $path, which no unit loads" >&2; bad=1; }
  done
  for path in $loaded; do
    grep -qxF "$path" <<<"$secret_paths" || { echo "a unit loads $path, which $doc's secrets table does not name" >&2; bad=1; }
  done
  return $bad
}

# Runs the installed package's postinst (configure, as an upgrade from
# 0.0.1) as if systemd ran this machine: in a mount namespace of its own
# with /run/systemd/system made, and a stand-in systemctl first on PATH that
# writes down what it is asked and calls two mesh units active, one of which
# fails to restart. The postinst must reload systemd, try-restart exactly
# those two, and say which restarted and which did not. What it cannot check
# without systemd as PID 1 (a container): that a real unit is restarted and
# then runs the new binary; `unshare` (util-linux) and root are needed.
check_postinst_restarts() {
  local deb="$1" dir said bad=0
  if ! command -v unshare >/dev/null 2>&1 || ! unshare -m true 2>/dev/null; then
    echo "no mount namespace here (unshare -m): the postinst's restart of running units was not run" >&2
    return 0
  fi
  dir=$(mktemp -d)
  dpkg-deb -e "$deb" "$dir/control"
  mkdir "$dir/bin"
  : >"$dir/log"
  cat >"$dir/bin/systemctl" <<'EOF'
#!/bin/sh
echo "$*" >>"$MESH_FAKE_SYSTEMCTL_LOG"
case "$1" in
  list-units) printf '%s\n' 'mesh-controller.service loaded active running mesh controller' \
    'mesh-postgres@db-1.service loaded active running mesh PostgreSQL provider db-1' \
    'mesh-grants.service loaded active running mesh grant agent' \
    'mesh-provide@cache-1.service loaded active running mesh provider cache-1 through a hook' ;;
  try-restart) [ "$2" = mesh-controller.service ] ;;
esac
EOF
  chmod 0755 "$dir/bin/systemctl"
  said=$(MESH_FAKE_SYSTEMCTL_LOG="$dir/log" PATH="$dir/bin:$PATH" unshare -m sh -c \
    'mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system && mount -t tmpfs tmpfs /etc/mesh &&
     mkdir -p /etc/mesh/credentials/mesh-controller /etc/mesh/credentials/mesh-postgres@db-1 \
       /etc/mesh/credentials/mesh-provide@cache-1 /etc/mesh/contributions/mesh-postgres@db-1 &&
     "$1" configure 0.0.1' _ "$dir/control/postinst" 2>&1) ||
    { echo "the postinst failed as an upgrade: $said" >&2; bad=1; }
  for line in "mesh: restarted mesh-controller.service (it was running)" \
    "mesh: mesh-postgres@db-1.service did not restart: see systemctl status mesh-postgres@db-1.service" \
    "mesh: mesh-grants.service not restarted: move its secrets to /etc/mesh/credentials/mesh-grants/ first (see the CHANGELOG), then systemctl restart mesh-grants.service" \
    "mesh: mesh-provide@cache-1.service not restarted: move its contributions folder to /etc/mesh/contributions/mesh-provide@cache-1/ and point MESH_CONTRIBUTIONS there first (see the CHANGELOG), then systemctl restart mesh-provide@cache-1.service"; do
    grep -qxF "$line" <<<"$said" || { echo "the postinst did not say: $line (it said: $said)" >&2; bad=1; }
  done
  for call in daemon-reload "try-restart mesh-controller.service" "try-restart mesh-postgres@db-1.service"; do
    grep -qxF "$call" "$dir/log" || { echo "the postinst did not run systemctl $call" >&2; bad=1; }
  done
  [ "$(grep -c '^try-restart' "$dir/log")" -eq 2 ] || { echo "the postinst restarted more than the running units:" \
    "$(cat "$dir/log")" >&2; bad=1; }
  rm -rf "$dir"
  return $bad
}

# Runs the installed units under a real systemd, as PID 1 of a PID and mount
# namespace of its own (root, unshare, /lib/systemd/systemd), and checks
# what each sees of /etc/mesh/contributions: a provider's unit its own
# folder (named after the unit) and no other, mesh-grants,
# mesh-controller and the console none. A drop-in replaces only what the unit runs (a
# probe, with the unit's user and every line of its hardening) and its
# settings and credentials files. /run, /tmp, /var/tmp and /etc/mesh are
# private tmpfs in that namespace, and no unit of the system's boot is
# started (no systemd-tmpfiles, which would empty the machine's /tmp).
check_units_isolation() {
  local sd=/lib/systemd/systemd said status=0 dir ns pid1="" n=0
  if [ "$(id -u)" -ne 0 ] || [ ! -x "$sd" ] || ! command -v nsenter >/dev/null 2>&1 ||
    ! unshare -m -p -f true 2>/dev/null; then
    echo "not root, or no systemd or namespaces here: the units' view of the contributions folders was not run" >&2
    return 0
  fi
  dir=$(mktemp -d)
  cat >"$dir/setup" <<'SETUP'
set -e
for d in /run /tmp /var/tmp /etc/mesh; do mount -t tmpfs -o mode=0755 tmpfs "$d"; done
mkdir -p /run/systemd/system /run/mesh-check
for unit in mesh-postgres@db-1 mesh-identity@id-1 mesh-provide@cache-1 mesh-provide@cache-2; do
  install -d -o mesh -g mesh -m 0700 "/etc/mesh/contributions/$unit"
  install -o mesh -g mesh -m 0600 /dev/null "/etc/mesh/contributions/$unit/contributions.json"
done
cat >/run/mesh-check/probe <<'PROBE'
#!/bin/sh
# $1: the one folder of /etc/mesh/contributions this unit may read, or none.
for unit in mesh-postgres@db-1 mesh-identity@id-1 mesh-provide@cache-1 mesh-provide@cache-2; do
  if [ "$unit" = "$1" ]; then
    cat "/etc/mesh/contributions/$unit/contributions.json" >/dev/null || exit 10
  elif [ -e "/etc/mesh/contributions/$unit" ]; then
    exit 11
  fi
done
PROBE
chmod 0755 /run/mesh-check/probe
printf '[Unit]\nDefaultDependencies=no\n' >/run/systemd/system/mesh-check.target
ln -s /dev/null /run/systemd/system/network-online.target
for template in mesh-postgres@ mesh-identity@ mesh-provide@ mesh-grants mesh-controller mesh-console; do
  mkdir -p "/run/systemd/system/$template.service.d"
  case "$template" in *@) own='%p@%i' ;; *) own=none ;; esac
  printf '[Unit]\nDefaultDependencies=no\n[Service]\nType=oneshot\nRestart=no\nEnvironmentFile=\nLoadCredential=\nExecStart=\nExecStart=/run/mesh-check/probe %s\n' \
    "$own" >"/run/systemd/system/$template.service.d/check.conf"
done
exec /lib/systemd/systemd --system --unit=mesh-check.target --log-target=null </dev/null
SETUP
  cat >"$dir/check" <<'CHECK'
bad=0
for unit in mesh-postgres@db-1 mesh-identity@id-1 mesh-provide@cache-1 mesh-provide@cache-2 mesh-grants mesh-controller \
  mesh-console; do
  if ! systemctl start "$unit.service" 2>/dev/null; then
    echo "$unit: $(systemctl show -p Result --value "$unit.service"), exit status $(systemctl show -p ExecMainStatus --value "$unit.service") (10: its own folder unreadable, 11: another's seen)"
    bad=1
  fi
done
if systemctl start mesh-postgres@db-9.service 2>/dev/null; then
  echo "mesh-postgres@db-9 started, although /etc/mesh/contributions/mesh-postgres@db-9 is missing"
  bad=1
fi
exit $bad
CHECK
  unshare --pid --fork --mount --mount-proc --uts sh "$dir/setup" </dev/null >"$dir/log" 2>&1 &
  ns=$!
  while [ -z "$pid1" ] && [ "$n" -lt 50 ]; do pid1=$(pgrep -P "$ns" || true); n=$((n + 1)); sleep 0.1; done
  n=0
  until [ -z "$pid1" ] || nsenter -t "$pid1" -m -p systemctl is-system-running >/dev/null 2>&1 ||
    [ "$n" -ge 300 ]; do n=$((n + 1)); sleep 0.1; done
  if [ -z "$pid1" ] || [ "$n" -ge 300 ]; then
    said="systemd did not come up in its namespace: $(cat "$dir/log")"
    status=1
  else
    said=$(nsenter -t "$pid1" -m -p sh -s <"$dir/check" 2>&1) || status=$?
  fi
  [ -z "$pid1" ] || kill -9 "$pid1" 2>/dev/null || true
  wait "$ns" 2>/dev/null || true
  rm -rf "$dir"
  if [ "$status" -ne 0 ]; then
    echo "the units' view of the contributions folders under systemd: $said" >&2
    return 1
  fi
}

# Checks a built package: its contents and conffiles; as root (and when no
# mesh package is installed already), installs it with dpkg, checks the
# files, the mesh user, the installed units and the postinst's restart of
# running units, then purges it again.
check_package() {
  local deb="$1" listed file made_user=""
  listed=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\.||')
  for file in $MESH_PACKAGE_FILES; do
    grep -qx "$file" <<<"$listed" || { echo "$deb lacks $file" >&2; return 1; }
  done
  # The node hook's dependencies go with it when the repository has them:
  # @redis/client, and the TypeScript kit's build (not a link into the
  # repository).
  if [ -f examples/hooks/node_modules/.package-lock.json ]; then
    for file in /usr/lib/mesh/hooks/node_modules/@redis/client/package.json \
      /usr/lib/mesh/hooks/node_modules/mesh-hook-kit/dist/index.js; do
      grep -qx "$file" <<<"$listed" || { echo "$deb lacks the node hook's dependency $file" >&2; return 1; }
    done
  fi
  # The kits' examples go runnable where they were built here.
  if [ -x examples/hooks/mariadb/dist/mariadb.js ] &&
    ! grep -qx /usr/lib/mesh/hooks/mariadb/node_modules/mysql2/package.json <<<"$listed"; then
    echo "$deb lacks the MariaDB hook with its dependency (/usr/lib/mesh/hooks/mariadb)" >&2
    return 1
  fi
  if { command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ]; } &&
    ! grep -qx /usr/lib/mesh/hooks/rabbitmq-hook <<<"$listed"; then
    echo "$deb lacks the RabbitMQ hook (/usr/lib/mesh/hooks/rabbitmq-hook)" >&2
    return 1
  fi
  dpkg-deb -f "$deb" Package Version Architecture Depends >/dev/null
  local settings
  settings=$(find deploy/env -type f | wc -l)
  [ "$(dpkg-deb -I "$deb" conffiles | grep -c '^/etc/mesh/')" -eq "$settings" ] ||
    { echo "$deb: the $settings files of deploy/env in /etc/mesh are not all conffiles" >&2; return 1; }
  check_man_pages "$deb" || return 1
  check_operating_paths "$deb" || return 1
  if [ "$(id -u)" -ne 0 ]; then
    echo "not root: the package was read (dpkg-deb -c, -I), not installed" >&2
    return 0
  fi
  if dpkg-query -W -f='${Status}' mesh 2>/dev/null | grep -q "installed"; then
    echo "a mesh package is installed on this machine: not installing the test package over it" >&2
    return 0
  fi
  getent passwd mesh >/dev/null || made_user=yes
  dpkg -i "$deb" >/dev/null
  local failed=""
  for file in $MESH_PACKAGE_FILES; do
    [ -e "$file" ] || { echo "installed, but $file is missing" >&2; failed=yes; }
  done
  getent passwd mesh >/dev/null || { echo "the postinst made no mesh user" >&2; failed=yes; }
  [ "$(stat -c '%U:%G %a' /etc/mesh)" = "root:mesh 750" ] ||
    { echo "/etc/mesh is $(stat -c '%U:%G %a' /etc/mesh), not root:mesh 750" >&2; failed=yes; }
  [ "$(stat -c '%U:%G %a' /etc/mesh/credentials 2>&1)" = "root:root 700" ] ||
    { echo "/etc/mesh/credentials is $(stat -c '%U:%G %a' /etc/mesh/credentials 2>&1), not root:root 700" >&2; failed=yes; }
  # The documented rsync of a provider's contributions folder needs its parent.
  [ "$(stat -c '%U:%G %a' /etc/mesh/contributions 2>&1)" = "root:mesh 750" ] ||
    { echo "/etc/mesh/contributions is $(stat -c '%U:%G %a' /etc/mesh/contributions 2>&1), not root:mesh 750" >&2; failed=yes; }
  # Each binary says its version, the commit it was built from and how.
  local version said
  version=$(dpkg-deb -f "$deb" Version)
  for bin in mesh-controller mesh-console mesh-postgres mesh-identity mesh-grants mesh-provide; do
    said=$("/usr/bin/$bin" --version) || { echo "/usr/bin/$bin --version failed" >&2; failed=yes; continue; }
    grep -Eqx "$bin $version \(commit [0-9a-zA-Z._-]+, (debug|release) build\)" <<<"$said" ||
      { echo "/usr/bin/$bin --version says \"$said\", not \"$bin $version (commit C, release|debug build)\"" >&2; failed=yes; }
  done
  # The installed page, as an operator reads it.
  if command -v man >/dev/null 2>&1; then
    MANWIDTH=80 man mesh-controller-contributions 2>/dev/null | grep -q "minting missing secrets" ||
      { echo "man mesh-controller-contributions does not show the installed page" >&2; failed=yes; }
  fi
  for file in /usr/lib/mesh/hooks/redis-acl.sh /usr/lib/mesh/hooks/redis-acl.mjs /usr/lib/mesh/hooks/redis-acl.py; do
    [ -x "$file" ] || { echo "installed, but $file is not executable" >&2; failed=yes; }
  done
  # The Python hook finds its kit beside it: without settings it exits 2
  # saying so (a kit it cannot import would exit 1).
  local py_status=0 py_said
  py_said=$(env -i PATH=/usr/bin:/bin PYTHONDONTWRITEBYTECODE=1 /usr/lib/mesh/hooks/redis-acl.py held 2>&1 </dev/null) || py_status=$?
  [ "$py_status" -eq 2 ] || { echo "the installed redis-acl.py does not start (exit $py_status): $py_said" >&2; failed=yes; }
  # The installed node, MariaDB and RabbitMQ hooks start: without settings
  # each says so and exits 2 at once (a missing module, such as the kit,
  # would exit 1 saying so).
  local hook_said
  for hook in /usr/lib/mesh/hooks/redis-acl.mjs /usr/lib/mesh/hooks/mariadb/dist/mariadb.js /usr/lib/mesh/hooks/rabbitmq-hook; do
    [ -e "$hook" ] || continue
    [ "$hook" != /usr/lib/mesh/hooks/redis-acl.mjs ] || [ -d /usr/lib/mesh/hooks/node_modules ] || continue
    local hook_status=0
    hook_said=$(env -i PATH=/usr/bin:/bin timeout 20 "$hook" held 2>&1 </dev/null) || hook_status=$?
    if [ "$hook_status" -ne 2 ] || ! grep -q "is not set" <<<"$hook_said"; then
      echo "the installed $hook does not start as it should (exit $hook_status, not 2 for its missing settings): $hook_said" >&2
      failed=yes
    fi
  done
  # The installed units, by name (the templates as an instance).
  verify_units mesh-controller.service mesh-grants.service \
    mesh-postgres@db-1.service mesh-identity@id-1.service mesh-provide@cache-1.service || failed=yes
  check_postinst_restarts "$deb" || failed=yes
  check_units_isolation || failed=yes
  dpkg --purge mesh >/dev/null
  for file in $MESH_PACKAGE_FILES; do
    [ ! -e "$file" ] || { echo "purged, but $file is still there" >&2; failed=yes; }
  done
  [ ! -e /etc/mesh ] || { echo "purged, but /etc/mesh is still there" >&2; failed=yes; }
  if [ -n "$made_user" ]; then
    deluser --system --quiet mesh >/dev/null 2>&1 || true
  fi
  [ -z "$failed" ]
}

# The test binary that starts a Keycloak (a JVM that takes a core to boot;
# every Keycloak test shares its one server): a lane of its own, beside the others.
MESH_TESTS_ONE_AT_A_TIME="mesh-provider-identity/keycloak"

# The longest of the others (a minute or more each, measured), started first
# so that no lane is left with a long one at the end.
MESH_TESTS_LONG_FIRST="mesh-provide/conform mesh/hooks mesh/e2e mesh/kit_go mesh-provide/bench-kit_go mesh/kit_python mesh/controller mesh/kit_typescript mesh/cluster mesh-sim/ci mesh/redis_acl mesh/stop"

# Builds every test binary of the workspace, then runs them as `cargo test`
# would (each in its package's folder): the Keycloak lane one after another,
# and $MESH_TEST_JOBS (default 2) lanes beside it taking the others (the
# doc tests one more job) from one queue, the longest first; the Keycloak
# lane takes from that queue too once its own are done. Each binary's
# output goes to a log, shown whole when it fails; a line a binary says how
# it ended, how long it took and, where the machine lets us count it, the
# CPU it used (test_cpu_root). The tests are parallel-safe: each starts
# its own servers on free ports in private folders.
run_tests() {
  local logs list
  logs=$(mktemp -d)
  list="$logs/binaries"
  cargo test --workspace --no-run --message-format=json |
    grep '"overflow_checks":[a-z]*,"test":true}' |
    sed -n 's|.*"package_id":"[^"]*#\([^"@]*\)@[^"]*","manifest_path":"\([^"]*\)/Cargo.toml","target":{[^}]*"name":"\([^"]*\)".*"executable":"\([^"]*\)".*|\1/\3 \2 \4|p' \
    >"$list"
  [ -s "$list" ] || { echo "run_tests: cargo built no test binary" >&2; return 1; }
  # The benchmarks named in MESH_BENCH_SMOKES (mesh-provide's) run as a
  # smoke, jobs like the test binaries: 5 consumers, one round, a debug
  # build; their figures are not those of docs/benchmarks.md.
  if [ -n "${MESH_BENCH_SMOKES:-}" ]; then
    local bench benches=()
    for bench in $MESH_BENCH_SMOKES; do benches+=(--bench "$bench"); done
    # --workspace, not -p mesh-provide: the dependencies' features are then
    # those of the build above, and only the benchmarks are compiled (with
    # -p, cargo built 30 crates again with that package's features alone:
    # 35 s of every CI run).
    cargo test --workspace --no-run --message-format=json "${benches[@]}" |
      grep '"kind":\["bench"\]' | grep '"overflow_checks":[a-z]*,"test":true}' |
      sed -n 's|.*"package_id":"[^"]*#\([^"@]*\)@[^"]*","manifest_path":"\([^"]*\)/Cargo.toml","target":{[^}]*"name":"\([^"]*\)".*"executable":"\([^"]*\)".*|\1/bench-\3 \2 \4|p' \
      >>"$list"
  fi
  export MESH_TEST_LOGS="$logs"
  # The run's PostgreSQL clusters are copies of one `initdb`, made in this
  # folder by the first of them (test-support's pg/template.rs). As root the
  # postgres user makes it: in /tmp (a TMPDIR may be private), and others
  # may enter the folder.
  local template tmp=${TMPDIR:-/tmp}
  [ "$(id -u)" -ne 0 ] || tmp=/tmp
  template=$(mktemp -d "$tmp/mesh-pg-template-XXXXXX")
  chmod 755 "$template"
  export MESH_PG_TEMPLATE="$template"
  MESH_TEST_CPU=$(test_cpu_root || true)
  export MESH_TEST_CPU
  local heavy="$logs/heavy" queue="$logs/queue" name
  : >"$heavy"
  : >"$queue"
  for name in $MESH_TESTS_LONG_FIRST; do
    grep "^$name " "$list" >>"$queue" || true
  done
  while read -r name rest; do
    if [[ " $MESH_TESTS_ONE_AT_A_TIME " == *" $name "* ]]; then
      echo "$name $rest" >>"$heavy"
    elif [[ " $MESH_TESTS_LONG_FIRST " != *" $name "* ]]; then
      echo "$name $rest" >>"$queue"
    fi
  done <"$list"
  echo "doc-tests . doc" >>"$queue"
  echo "   $(wc -l <"$list") test binaries and the doc tests: $(wc -l <"$heavy") one at a time" \
    "(Keycloak), the rest ${MESH_TEST_JOBS:-2} at a time beside them"
  local started=$SECONDS pids=() lane
  (
    while read -r line; do run_test_binary $line; done <"$heavy"
    run_queue "$queue"
  ) &
  pids+=($!)
  for lane in $(seq "${MESH_TEST_JOBS:-2}"); do
    run_queue "$queue" &
    pids+=($!)
  done
  local lanes_failed=0 pid
  for pid in "${pids[@]}"; do wait "$pid" || lanes_failed=$((lanes_failed + 1)); done
  local failed jobs ran
  failed=$(cat "$logs"/*.failed 2>/dev/null | sort || true)
  jobs=$(($(wc -l <"$list") + 1))
  ran=$(wc -l <"$logs/ran" 2>/dev/null || echo 0)
  local cpu=""
  if [ -n "$MESH_TEST_CPU" ]; then
    cpu=" ($(cat "$logs"/*.cpu 2>/dev/null | awk '{ s += $1 } END { printf "%d", s / 1000 }') s of CPU)"
    # A cgroup is removed once empty; a zombie its binary left (reaped by
    # init a moment later) keeps it busy until then.
    rmdir "$MESH_TEST_CPU"/*/ "$MESH_TEST_CPU" 2>/dev/null ||
      { sleep 2; rmdir "$MESH_TEST_CPU"/*/ "$MESH_TEST_CPU" 2>/dev/null; } || true
  fi
  echo "   all test binaries ran in $((SECONDS - started))s$cpu"
  rm -rf "$template"
  if [ -n "$failed" ]; then
    echo "!! failed test binaries:" $failed >&2
    return 1
  fi
  # A job that never said how it ended is a failure too: a lane that
  # stopped early leaves the jobs after it unrun.
  if [ "$ran" -ne "$jobs" ] || [ "$lanes_failed" -ne 0 ]; then
    echo "!! $ran of $jobs jobs said how they ended ($lanes_failed lanes stopped early): not run:" >&2
    comm -23 <({ cut -d' ' -f1 "$list"; echo doc-tests; } | sort) <(sort "$logs/ran" 2>/dev/null) >&2
    return 1
  fi
  rm -rf "$logs"
}

# Prints a new folder for run_tests' cgroups, one a test binary, where each
# counts the CPU of the binary and of all it starts (a server that
# daemonizes, PostgreSQL or Keycloak, stays in its cgroup): cgroup v1's
# cpuacct or the cgroup v2 hierarchy, when one is mounted and this user may
# write it (as root). Fails when there is none: the CPU is then not said.
test_cpu_root() {
  local root
  for root in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/unified /sys/fs/cgroup; do
    [ -w "$root" ] && [ -e "$root/cgroup.procs" ] || continue
    mktemp -d "$root/mesh-tests-XXXXXX" 2>/dev/null && return 0
  done
  return 1
}

# The CPU milliseconds the cgroup GROUP has used (v1: cpuacct.usage in ns;
# v2: cpu.stat's usage_usec); 0 when it says none.
cgroup_cpu_ms() {
  local group="$1"
  if [ -r "$group/cpuacct.usage" ]; then
    echo $(($(cat "$group/cpuacct.usage") / 1000000))
  else
    awk '$1 == "usage_usec" { printf "%d", $2 / 1000; found = 1 } END { if (!found) print 0 }' \
      "$group/cpu.stat" 2>/dev/null || echo 0
  fi
}

# One lane of run_tests: takes the next job off the queue file QUEUE (under
# a lock, so two lanes never take the same) until it is empty.
run_queue() {
  local queue="$1" line
  while true; do
    line=$(flock "$queue.lock" bash -c 'head -n 1 "$0"; sed -i 1d "$0"' "$queue")
    [ -n "$line" ] || return 0
    run_test_binary $line
  done
}

# One job of run_tests: NAME DIR EXECUTABLE (or "doc" for the doc tests),
# in a cgroup of its own under $MESH_TEST_CPU when that is set.
run_test_binary() {
  local name="$1" dir="$2" exe="$3" file log started=$SECONDS status=0 group=""
  # The job's files in $MESH_TEST_LOGS (and its cgroup) are named after it.
  file=$(echo "$name" | tr / _)
  log="$MESH_TEST_LOGS/$file.log"
  if [ -n "${MESH_TEST_CPU:-}" ]; then
    group="$MESH_TEST_CPU/$file"
    mkdir "$group" 2>/dev/null || group=""
  fi
  (
    # Into the binary's cgroup first: what it starts is counted with it.
    [ -z "$group" ] || echo "$BASHPID" >"$group/cgroup.procs" 2>/dev/null || true
    if [ "$exe" = doc ]; then
      cargo test --workspace --doc
    elif [[ "$name" == */bench-* ]]; then
      cd "$dir" && MESH_BENCH_CONSUMERS=5 MESH_BENCH_RUNS=1 "$exe"
    else
      cd "$dir" && "$exe"
    fi
  ) >"$log" 2>&1 || status=$?
  local cpu=""
  if [ -n "$group" ]; then
    local ms
    ms=$(cgroup_cpu_ms "$group")
    echo "$ms" >"$MESH_TEST_LOGS/$file.cpu"
    cpu=", $((ms / 1000))s CPU"
  fi
  # A benchmark's smoke says no "test result:" line: grep finds nothing,
  # which under `set -e -o pipefail` would end this lane without a word
  # (and with it the jobs it had yet to take).
  local result
  result=$(grep -E '^test result:' "$log" | tail -n 1 | sed 's/^test result: //; s/; finished in.*//' || true)
  if [ "$status" -eq 0 ]; then
    echo "   ok   $name ($((SECONDS - started))s$cpu) ${result}"
  else
    echo "   FAIL $name ($((SECONDS - started))s$cpu, exit $status) ${result}"
    echo "---- output of $name ----"
    cat "$log"
    echo "---- end of $name ----"
    echo "$name" >"$MESH_TEST_LOGS/$file.failed"
  fi
  echo "$name" >>"$MESH_TEST_LOGS/ran"
}
