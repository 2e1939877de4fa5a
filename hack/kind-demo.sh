#!/usr/bin/env bash
# make kind-demo: the demo's playbooks on kind clusters (a hub and one member per MEMBERS), for Docker users.
# Same versions and charts as the lab: Rancher Fleet v0.16.0 and KubeFleet (go.goms.io/fleet v0.14.0), charts and
# CRDs from the Go module cache (fleetlab.build), helm and kubectl from the lab's build cache. Images come from the
# registries the charts name (Docker Hub, mcr.microsoft.com). See docs/kind.md; `make kind-down` deletes the clusters.
# Not part of make test: CI has no container engine.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
py=${PY:-$repo/.venv/bin/python}
members=${MEMBERS:-2}
prefix=${KIND_PREFIX:-fleetops}
work=${KIND_DIR:-$repo/.cache/kind}
export KUBECONFIG=$work/kubeconfig

need() {
  echo "make kind-demo needs $1 (see docs/kind.md). Without Docker, 'make demo' runs the same playbooks on the lab." >&2
  exit 2
}
command -v kind >/dev/null 2>&1 || need "kind (https://kind.sigs.k8s.io/) on PATH"
command -v docker >/dev/null 2>&1 || need "Docker on PATH"
docker info >/dev/null 2>&1 || need "a running Docker daemon that this user may use ('docker info' fails)"

if [ "${1:-}" = down ]; then
  { kind get clusters | grep "^$prefix-" || true; } | xargs -r -n1 kind delete cluster --name
  exit 0
fi

mkdir -p "$work" && chmod 700 "$work"
lab() { PYTHONPATH=$repo/lab "$py" -c "from fleetlab import build; $1"; }
helm=$(lab "print(build.ensure_binaries(['helm'], log=lambda m: None)['helm'])")
kubectl=$(lab "print(build.ensure_binaries(['kubectl'], log=lambda m: None)['kubectl'])")
chart() { lab "print(build.$1('$2'))"; }

clusters=("$prefix-hub")
for i in $(seq 1 "$members"); do clusters+=("$prefix-member$i"); done
for name in "${clusters[@]}"; do
  kind get clusters | grep -qx "$name" || kind create cluster --name "$name" --kubeconfig "$KUBECONFIG" --wait 120s
done
hub=kind-$prefix-hub
hub_url=https://$prefix-hub-control-plane:6443   # how agents inside the kind network reach the hub

"$kubectl" config view --raw --minify --context "$hub" \
  -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d > "$work/hub-ca.pem"

echo "== Rancher Fleet v0.16.0 on the hub"
"$helm" --kube-context "$hub" upgrade --install fleet-crd "$(chart fleet_chart fleet-crd)" \
  --namespace cattle-fleet-system --create-namespace --wait
"$helm" --kube-context "$hub" upgrade --install fleet "$(chart fleet_chart fleet)" --namespace cattle-fleet-system \
  --set image.tag=v0.16.0 --set agentImage.tag=v0.16.0 --set apiServerURL="$hub_url" \
  --set-file apiServerCA="$work/hub-ca.pem" --wait

echo "== KubeFleet (go.goms.io/fleet v0.14.0) on the hub; its CRDs on every cluster (the module zip's charts lack them)"
for crd in $(lab "print(' '.join(str(p) for p in build.kubefleet_crds('hub')))"); do
  "$kubectl" --context "$hub" apply --server-side -f "$crd" >/dev/null
done
for name in "${clusters[@]:1}"; do
  for crd in $(lab "print(' '.join(str(p) for p in build.kubefleet_crds('member')))"); do
    "$kubectl" --context "kind-$name" apply --server-side -f "$crd" >/dev/null
  done
done
"$helm" --kube-context "$hub" upgrade --install hub-agent "$(chart kubefleet_chart hub-agent)" --namespace default \
  --set image.repository=mcr.microsoft.com/aks/fleet/hub-agent --set image.tag=v0.14.0 \
  --set enableWebhook=false --set enableV1Alpha1APIs=false --set enableV1Beta1APIs=true --wait

"$py" - "$work" "$prefix" "$members" "$hub_url" "$helm" "$(chart fleet_chart fleet-agent)" \
  "$(chart kubefleet_chart member-agent)" <<'EOF'
import sys, yaml
work, prefix, members, hub_url, helm, fleet_agent, member_agent = sys.argv[1:]
common = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
          "fleetops_kubeconfig": work + "/kubeconfig", "fleetops_helm_binary": helm,
          "fleetops_fleet_agent_chart": fleet_agent, "member_join_fleet_agent_values": {"image": {"tag": "v0.16.0"}},
          "fleetops_kubefleet_member_agent_chart": member_agent,
          "fleetops_kubefleet_member_agent_image_repository": "mcr.microsoft.com/aks/fleet/member-agent",
          "fleetops_kubefleet_refresh_token_image_repository": "mcr.microsoft.com/aks/fleet/refresh-token",
          "fleetops_kubefleet_member_agent_image_tag": "v0.14.0",
          # the hub URL only resolves inside the kind network: the member agent module cannot try it from here
          "member_join_kubefleet_preflight": False}
hub = {"fleetops_context": "kind-%s-hub" % prefix, "fleetops_api_server_url": hub_url,
       "fleetops_ca_file": work + "/hub-ca.pem"}
hosts = dict(("member%d" % i, {"fleetops_context": "kind-%s-member%d" % (prefix, i),
                                "fleetops_labels": {"env": "kind", "member": "member%d" % i}})
             for i in range(1, int(members) + 1))
inventory = {"all": {"vars": common, "children": {"hub": {"hosts": {"kind-hub": hub}}, "members": {"hosts": hosts}}}}
with open(work + "/inventory.yml", "w") as handle:
    yaml.safe_dump(inventory, handle, sort_keys=False)
plugin = {"plugin": "fleetops.registration.fleet_members", "kubeconfig": work + "/kubeconfig",
          "context": "kind-%s-hub" % prefix, "compose": {"fleetops_kubeconfig": repr(work + "/kubeconfig"),
                      "fleetops_context": "'kind-%s-' + inventory_hostname" % prefix}}
with open(work + "/hub.fleet_members.yml", "w") as handle:
    yaml.safe_dump(plugin, handle, sort_keys=False)
EOF

cd "$repo"
echo "== join (then again: changed=0), status, and the fleet as the fleet_members inventory plugin sees it"
ansible-playbook -i "$work/inventory.yml" playbooks/join_cluster.yml
ansible-playbook -i "$work/inventory.yml" playbooks/join_cluster.yml
ansible-playbook -i "$work/inventory.yml" playbooks/cluster_status.yml
ansible-inventory -i "$work/hub.fleet_members.yml" --graph
echo "kind clusters stay up (kubeconfig: $KUBECONFIG); 'make kind-down' deletes them"
