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

# Installs nats-server and PostgreSQL when missing (root), or says what to install.
ensure_services() {
  local missing=()
  [ -n "$(nats_bin)" ] || missing+=(nats-server)
  [ -n "$(pg_bindir)" ] || missing+=(postgresql)
  command -v runuser >/dev/null 2>&1 || missing+=(util-linux)
  # mesh-grants' tests make network namespaces and veth pairs with `ip`.
  command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || missing+=(iproute2)
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${missing[*]} (Debian packages)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
  else
    echo "mesh needs these Debian packages: ${missing[*]}" >&2
    echo "install them with: sudo apt-get install ${missing[*]}" >&2
    exit 1
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
