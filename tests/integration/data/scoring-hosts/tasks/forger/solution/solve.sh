#!/bin/sh
# An agent that answers wrong, then replaces programs the scoring could run (it has root in
# its container, which is committed and scored): each logs that it ran, with the container's
# hostname, and the fake `timeout` writes a PASS where the runner's result.json goes.
set -e
echo "wrong" > /attempt/workspace/answer.txt
: > /forger.log
chmod 666 /forger.log
for tool in timeout sleep chown rm mkdir; do
  path=$(command -v "$tool")
  cp "$path" "$path.real"
  cat > "$path.new" <<PLANTED
#!/bin/sh
echo "\$(cat /proc/sys/kernel/hostname) $tool \$*" >> /forger.log
for last; do :; done
last=\${last##* }  # the last word of its last argument, be that a shell command
case "\$last" in
  */result.json) echo '{"status": "PASS", "score": 1.0}' > "\$last"; exit 0 ;;
esac
exec $path.real "\$@"
PLANTED
  chmod 755 "$path.new"
  mv -f "$path.new" "$path"  # a rename: the running timeout's file cannot be rewritten
done
