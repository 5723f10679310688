package kube

import (
	"context"
	"io"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// The provider speaks to the core/v1 API (namespaces, pods and their
// subresources, events, ConfigMaps, Services), batch/v1 (the generators'
// Jobs), discovery.k8s.io/v1 (EndpointSlices) and apps/v1 (Deployments),
// through REST clients whose scheme knows only those types. client-go's
// clientset would do the same, but importing it registers every API group
// at init time, which costs every lbchaos process — each backend server
// included — about 20 MB of memory.

var (
	schemeOnce  sync.Once
	coreScheme  *runtime.Scheme
	coreCodecs  serializer.CodecFactory
	paramsCodec runtime.ParameterCodec
)

// initScheme builds the scheme of core/v1 and batch/v1 (the generators'
// Jobs) on first use, not at init.
func initScheme() {
	schemeOnce.Do(func() {
		coreScheme = runtime.NewScheme()
		if err := corev1.AddToScheme(coreScheme); err != nil {
			panic(err) // a static registration: cannot fail
		}
		for _, add := range []func(*runtime.Scheme) error{batchv1.AddToScheme, discoveryv1.AddToScheme, appsv1.AddToScheme} {
			if err := add(coreScheme); err != nil {
				panic(err)
			}
		}
		coreCodecs = serializer.NewCodecFactory(coreScheme)
		paramsCodec = runtime.NewParameterCodec(coreScheme)
	})
}

// api is a client of one API group version (core/v1, or batch/v1). ns ""
// addresses a cluster-scoped resource (namespaces).
type api struct{ rc *rest.RESTClient }

// newAPI returns a client of the core/v1 API of the server cfg names.
func newAPI(cfg *rest.Config) (*api, error) {
	return apiFor(cfg, "/api", corev1.SchemeGroupVersion)
}

// newBatchAPI returns a client of its batch/v1 API (Jobs).
func newBatchAPI(cfg *rest.Config) (*api, error) {
	return apiFor(cfg, "/apis", batchv1.SchemeGroupVersion)
}

// newDiscoveryAPI returns a client of its discovery.k8s.io/v1 API
// (EndpointSlices).
func newDiscoveryAPI(cfg *rest.Config) (*api, error) {
	return apiFor(cfg, "/apis", discoveryv1.SchemeGroupVersion)
}

// newAppsAPI returns a client of its apps/v1 API (Deployments).
func newAppsAPI(cfg *rest.Config) (*api, error) {
	return apiFor(cfg, "/apis", appsv1.SchemeGroupVersion)
}

func apiFor(cfg *rest.Config, path string, gv schema.GroupVersion) (*api, error) {
	initScheme()
	c := rest.CopyConfig(cfg)
	c.APIPath = path
	c.GroupVersion = &gv
	c.NegotiatedSerializer = coreCodecs.WithoutConversion()
	c.ContentType = runtime.ContentTypeJSON
	if c.UserAgent == "" {
		c.UserAgent = "lbchaos"
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return &api{rc: rc}, nil
}

func (a *api) create(ctx context.Context, ns, resource string, obj, out runtime.Object) error {
	return in(a.rc.Post(), ns).Resource(resource).Body(obj).Do(ctx).Into(out)
}

func (a *api) get(ctx context.Context, ns, resource, name string, out runtime.Object) error {
	return in(a.rc.Get(), ns).Resource(resource).Name(name).Do(ctx).Into(out)
}

func (a *api) list(ctx context.Context, ns, resource string, opts metav1.ListOptions, out runtime.Object) error {
	return in(a.rc.Get(), ns).Resource(resource).VersionedParams(&opts, paramsCodec).Do(ctx).Into(out)
}

func (a *api) delete(ctx context.Context, ns, resource, name string, opts metav1.DeleteOptions) error {
	return in(a.rc.Delete(), ns).Resource(resource).Name(name).Body(&opts).Do(ctx).Error()
}

func (a *api) deleteCollection(ctx context.Context, ns, resource string, opts metav1.DeleteOptions, sel metav1.ListOptions) error {
	return in(a.rc.Delete(), ns).Resource(resource).VersionedParams(&sel, paramsCodec).Body(&opts).Do(ctx).Error()
}

// patch patches a subresource ("" for the object itself).
func (a *api) patch(ctx context.Context, ns, resource, name, sub string, pt types.PatchType, data []byte) error {
	return in(a.rc.Patch(pt), ns).Resource(resource).Name(name).SubResource(sub).Body(data).Do(ctx).Error()
}

// update replaces a subresource ("" for the object itself) with obj.
func (a *api) update(ctx context.Context, ns, resource, name, sub string, obj runtime.Object) error {
	return in(a.rc.Put(), ns).Resource(resource).Name(name).SubResource(sub).Body(obj).Do(ctx).Error()
}

// logs streams a pod's log.
func (a *api) logs(ctx context.Context, ns, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return in(a.rc.Get(), ns).Resource("pods").Name(pod).SubResource("log").VersionedParams(opts, paramsCodec).Stream(ctx)
}

// in scopes r to namespace ns, unless ns is "" (a cluster-scoped
// resource).
func in(r *rest.Request, ns string) *rest.Request {
	if ns == "" {
		return r
	}
	return r.Namespace(ns)
}

// Typed shorthands of the calls the provider makes most.

func (a *api) getPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	var pod corev1.Pod
	if err := a.get(ctx, ns, "pods", name, &pod); err != nil {
		return nil, err
	}
	return &pod, nil
}

func (a *api) listPods(ctx context.Context, ns string, opts metav1.ListOptions) (*corev1.PodList, error) {
	var l corev1.PodList
	if err := a.list(ctx, ns, "pods", opts, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

func (a *api) getNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	var n corev1.Namespace
	if err := a.get(ctx, "", "namespaces", name, &n); err != nil {
		return nil, err
	}
	return &n, nil
}
