package translate

import (
	"maps"
	"slices"
	"strings"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// ImagePull is the credentials of a registry that serves images of a build's steps: the
// username and password of the registry-image (or docker-image) source of a task's
// image_resource or of a custom resource type's image, as the pipeline writes them,
// ((vars)) and all. Concourse's registry-image resource fetches the image with them; here
// the node pulls it, with the build's Secret of image pull credentials
// (Result.ImagePullSecret), which the build's starter fills in from them.
type ImagePull struct {
	// Registry is the credentials' key in the Secret's Docker config, which the kubelet
	// matches to the images it pulls: the image's repository (HOST/PATH), or Docker Hub's
	// DockerHubRegistry for an image of Docker Hub.
	Registry string
	// Username and Password are the source's, as written.
	Username, Password string
}

// DockerHubRegistry is the key of Docker Hub's credentials in a Docker config: the
// kubelet gives them to every image of Docker Hub, whatever its repository.
const DockerHubRegistry = "https://index.docker.io/v1/"

// ImagePullSecretSuffix ends the name of a build's Secret of image pull credentials,
// after its PipelineRun's name.
const ImagePullSecretSuffix = "-image-pull"

// registryImage is imageFromResource, noting the credentials the image's source gives for
// its registry: the pods that run the image pull it with them (imagePulls).
func (c *compiler) registryImage(typ string, source concourse.Source, version concourse.Version) (string, string) {
	img, reason := imageFromResource(typ, source, version)
	if reason != "" {
		return img, reason
	}
	if pull, ok := imagePullOf(source); ok {
		if _, seen := c.pulls[img]; !seen {
			c.pulls[img] = pull
		}
	}
	return img, ""
}

// imagePullOf is the pull credentials of a registry image's source, if it has any.
func imagePullOf(source concourse.Source) (ImagePull, bool) {
	user, _ := source["username"].(string)
	pass, _ := source["password"].(string)
	if user == "" && pass == "" {
		return ImagePull{}, false
	}
	repo, _ := source["repository"].(string)
	return ImagePull{Registry: pullRegistry(repo), Username: user, Password: pass}, true
}

// pullRegistry is the Docker config key of an image repository's credentials: the
// repository itself, which the kubelet matches as a prefix of the images it pulls, or
// DockerHubRegistry for Docker Hub, whose images the kubelet matches by host alone.
func pullRegistry(repo string) string {
	host, _, found := strings.Cut(repo, "/")
	if !found || !(strings.ContainsAny(host, ".:") || host == "localhost") {
		return DockerHubRegistry
	}
	switch host {
	case "docker.io", "index.docker.io", "registry-1.docker.io":
		return DockerHubRegistry
	}
	return repo
}

// imagePulls gives each of the build's pods that pulls an image with credentials
// (registryImage) the build's Secret of them, and returns the credentials, one per
// registry, sorted: where images of one registry give different credentials, those of
// the image that sorts first. The refs of their ((vars)) are recorded with the build's
// other credentials (Result.Credentials), to be looked up as theirs are, though no step
// reads them.
func (c *compiler) imagePulls(secret string, taskLists ...[]v1.PipelineTask) []ImagePull {
	if len(c.pulls) == 0 {
		return nil
	}
	used := map[string]ImagePull{}
	for _, tasks := range taskLists {
		for _, pt := range tasks {
			img := ""
			for _, p := range pt.Params {
				if p.Name == runspec.ParamImage {
					img = p.Value.StringVal
				}
			}
			if _, ok := c.pulls[img]; !ok {
				continue
			}
			used[img] = c.pulls[img]
			c.podTemplate(pt.Name).ImagePullSecrets = []corev1.LocalObjectReference{{Name: secret}}
		}
	}
	byRegistry := map[string]ImagePull{}
	for _, img := range slices.Sorted(maps.Keys(used)) {
		if _, seen := byRegistry[used[img].Registry]; !seen {
			byRegistry[used[img].Registry] = used[img]
		}
	}
	out := make([]ImagePull, 0, len(byRegistry))
	var refs []vars.Reference
	for _, reg := range slices.Sorted(maps.Keys(byRegistry)) {
		pull := byRegistry[reg]
		out = append(out, pull)
		for _, s := range []string{pull.Username, pull.Password} {
			for _, n := range vars.Names(s) {
				if ref, err := vars.ParseReference(n); err == nil && ref.Source != "." {
					refs = append(refs, ref)
				}
			}
		}
	}
	if c.opts.SuppliedCredentials {
		c.suppliedKeys(refs)
	} else {
		c.secretsOf(refs)
	}
	return out
}

// imagePullSecret is the build's Secret of image pull credentials without its data, as
// Result.ImagePullSecret.
func imagePullSecret(name string, labels, annotations map[string]string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Type:       corev1.SecretTypeDockerConfigJson,
	}
}
