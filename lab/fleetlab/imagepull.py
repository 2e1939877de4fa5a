"""Pods whose image the lab cannot "pull": what a kubelet reports for them (pure logic, no API).

The lab can only run images it has a locally built binary for (``build.IMAGE_BINARIES``). For a Pod
with any other image the runner reports what a kubelet (v1.34) reports when the image cannot be
pulled, so a test can inject that fault (patch an agent Deployment's image to
``registry.invalid/fleet-agent:missing``) and the collection can diagnose it:

- pod status: phase Pending, Ready/ContainersReady False (ContainersNotReady); each container
  whose image is missing waits with ``ErrImagePull``, then after ``BACKOFF_AFTER`` seconds with
  ``ImagePullBackOff``; containers whose image is known wait with ``ContainerCreating`` (the lab
  realises a Pod only as a whole; a real kubelet would start them);
- Events from ``kubelet`` on the container (``spec.containers{NAME}``): Pulling, Failed (the pull
  error), Failed ``Error: ErrImagePull``, then BackOff and Failed ``Error: ImagePullBackOff``,
  whose count grows at most once per ``EVENT_REPEAT`` seconds (a kubelet retries the pull every
  back-off; the lab does not repeat the pull events).

Times are passed in (``elapsed`` seconds since the runner first saw the Pod), so this is testable
without a clock; ``runner`` does the API calls.
"""

from fleetlab.podspec import image_repository, lookup_binary

BACKOFF_AFTER = 5.0
EVENT_REPEAT = 30.0


def missing_images(containers, image_binaries, binaries):
    """``[(container name, image, pull error)]`` for the containers whose image has no built binary."""
    missing = []
    for container in containers:
        image = container.get('image', '')
        name = lookup_binary(image, image_binaries)
        if name and name in binaries:
            continue
        why = 'binary %s not built' % name if name else 'no binary for repository %s' % image_repository(image)
        missing.append((container['name'], image, 'failed to pull and unpack image "%s": not found in the lab (%s)' % (image, why)))
    return missing


def backing_off(elapsed):
    """True once the kubelet would have moved from ErrImagePull to ImagePullBackOff."""
    return elapsed >= BACKOFF_AFTER


def pod_status(containers, missing, elapsed, since):
    """The pod status a kubelet writes for a pod whose images in ``missing`` cannot be pulled.

    ``since`` (RFC 3339) is when the runner first saw the pod: startTime and the conditions' transition time.
    """
    errors = {name: (image, error) for name, image, error in missing}
    statuses = []
    for container in containers:
        name = container['name']
        if name not in errors:
            waiting = {'reason': 'ContainerCreating'}
        elif backing_off(elapsed):
            image, error = errors[name]
            waiting = {'reason': 'ImagePullBackOff', 'message': 'Back-off pulling image "%s": ErrImagePull: %s' % (image, error)}
        else:
            waiting = {'reason': 'ErrImagePull', 'message': errors[name][1]}
        statuses.append({'name': name, 'image': container.get('image', ''), 'imageID': '', 'restartCount': 0,
                         'ready': False, 'started': False, 'state': {'waiting': waiting}})
    unready = 'containers with unready status: [%s]' % ' '.join(c['name'] for c in containers)
    conditions = [{'type': 'Initialized', 'status': 'True'},
                  {'type': 'Ready', 'status': 'False', 'reason': 'ContainersNotReady', 'message': unready},
                  {'type': 'ContainersReady', 'status': 'False', 'reason': 'ContainersNotReady', 'message': unready},
                  {'type': 'PodScheduled', 'status': 'True'}]
    for condition in conditions:
        condition.update({'lastProbeTime': None, 'lastTransitionTime': since})
    return {'phase': 'Pending', 'conditions': conditions, 'containerStatuses': statuses, 'startTime': since}


def wanted_events(missing, elapsed):
    """The events a kubelet would have recorded ``elapsed`` seconds after the first pull:
    ``[(container, type, reason, message, count)]``; (container, reason, message) identifies one."""
    events = []
    for name, image, error in missing:
        events += [(name, 'Normal', 'Pulling', 'Pulling image "%s"' % image, 1),
                   (name, 'Warning', 'Failed', 'Failed to pull image "%s": %s' % (image, error), 1),
                   (name, 'Warning', 'Failed', 'Error: ErrImagePull', 1)]
        if backing_off(elapsed):
            count = 1 + int((elapsed - BACKOFF_AFTER) // EVENT_REPEAT)
            events += [(name, 'Normal', 'BackOff', 'Back-off pulling image "%s"' % image, count),
                       (name, 'Warning', 'Failed', 'Error: ImagePullBackOff', count)]
    return events


def event_body(pod, wanted, name, first, last):
    """A core/v1 Event named ``name`` for one of ``wanted_events`` of ``pod``; ``first``/``last`` are RFC 3339 stamps."""
    container, kind, reason, message, count = wanted
    meta = pod['metadata']
    return {'apiVersion': 'v1', 'kind': 'Event',
            'metadata': {'name': name, 'namespace': meta['namespace']},
            'involvedObject': {'apiVersion': 'v1', 'kind': 'Pod', 'namespace': meta['namespace'], 'name': meta['name'],
                               'uid': meta['uid'], 'fieldPath': 'spec.containers{%s}' % container},
            'type': kind, 'reason': reason, 'message': message, 'count': count,
            'firstTimestamp': first, 'lastTimestamp': last,
            'source': {'component': 'kubelet'}, 'reportingComponent': 'kubelet', 'reportingInstance': ''}
