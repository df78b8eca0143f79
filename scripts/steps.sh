# Sourced by .ci/run and scripts/test.sh: `step NAME` starts a named step (printing `== NAME`)
# and closes the one before it; when the script exits, whether it passed or failed, the
# seconds each step took are printed, so every run says what each part of CI costs.
step_names=()
step_seconds=()
step() {
  if [ ${#step_names[@]} -gt 0 ]; then
    step_seconds[-1]=$((SECONDS - step_started))
  fi
  step_names+=("$1")
  step_seconds+=(0)
  step_started=$SECONDS
  echo "== $1"
}
steps_report() {
  local status=$? i
  [ ${#step_names[@]} -gt 0 ] || return "$status"
  step_seconds[-1]=$((SECONDS - step_started))
  echo "== seconds per step of $(basename "$0") (exit status $status)"
  for i in "${!step_names[@]}"; do
    printf '%6d s  %s\n' "${step_seconds[$i]}" "${step_names[$i]}"
  done
  printf '%6d s  in all\n' "$SECONDS"
  return "$status"
}
trap steps_report EXIT
