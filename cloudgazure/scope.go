package cloudgazure

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/cloudg/cloudg/internal/cowmap"
	"github.com/cloudg/cloudg/internal/scopekey"
	"github.com/cloudg/cloudg/resilience"
)

// Provider is the provider name of every Azure scope.
const Provider = "azure"

// Service names the scope parser produces besides the namespaces.
const (
	// ServiceResources is the service of a path without a Microsoft.<Namespace> segment.
	ServiceResources = "resources"
	// ServiceResourceGraph is Resource Graph's service.
	ServiceResourceGraph = "resourcegraph"
	// ServiceKeyVault is the service of a key vault's data plane
	// (<vault>.vault.azure.net, and its sovereign clouds' suffixes; see
	// ScopeOfURL).
	ServiceKeyVault = "keyvault"
	// ServiceManagedHSM is the service of a managed HSM's data plane
	// (<hsm>.managedhsm.azure.net, and its sovereign clouds' suffixes; see
	// ScopeOfURL).
	ServiceManagedHSM = "managedhsm"
	// ServiceCosmosDB is the service of a Cosmos DB account's data plane
	// (<account>.documents.azure.com, <account>.sqlx.cosmos.azure.com,
	// <account>.table.cosmos.azure.com, and their sovereign clouds'
	// suffixes; see ScopeOfURL).
	ServiceCosmosDB = "cosmosdb"
	// ServiceMessaging is the service of a Service Bus or Event Hubs
	// namespace's data plane (<namespace>.servicebus.windows.net, and its
	// sovereign clouds' suffixes; see ScopeOfURL). It is not servicebus,
	// the service of Resource Manager's Microsoft.ServiceBus requests, so
	// that a service override of the configuration names one of the two.
	ServiceMessaging = "messaging"
	// ServiceAppConfig is the service of an App Configuration store's data
	// plane (<store>.azconfig.io, and its sovereign clouds' suffixes; see
	// ScopeOfURL).
	ServiceAppConfig = "appconfig"
	// ServiceAIServices is the service of an Azure AI services account's
	// data plane, Azure OpenAI's included
	// (<account>.cognitiveservices.azure.com, <account>.openai.azure.com,
	// <account>.services.ai.azure.com, and their sovereign clouds'
	// suffixes; see ScopeOfURL). It is not
	// cognitiveservices, the service of Resource Manager's
	// Microsoft.CognitiveServices requests.
	ServiceAIServices = "aiservices"
	// ServiceContainerRegistry is the service of a container registry's
	// data plane (<registry>.azurecr.io, its dedicated data endpoints
	// <registry>.<region>.data.azurecr.io, and their sovereign clouds'
	// suffixes; see ScopeOfURL). It is not containerregistry, the service
	// of Resource Manager's Microsoft.ContainerRegistry requests.
	ServiceContainerRegistry = "acr"
	// ServiceEventGrid is the service of an Event Grid topic's, domain's
	// or namespace's data plane (<name>.<region>-1.eventgrid.azure.net,
	// and its sovereign clouds' suffixes; see ScopeOfURL).
	ServiceEventGrid = "eventgrid"
	// ServiceWebPubSub is the service of a Web PubSub service's data
	// plane (<name>.webpubsub.azure.com, and its sovereign clouds'
	// suffixes; see ScopeOfURL).
	ServiceWebPubSub = "webpubsub"
)

// storageServices are the services of a storage account's data plane, the
// second label of its hosts (<account>.blob.core.windows.net).
var storageServices = [...]string{"blob", "queue", "table", "file", "dfs"}

// The DNS suffixes of the data planes of Azure's clouds (public, China,
// US Government), as Microsoft's documentation and the Azure SDKs' cloud
// settings give them. A host under any other suffix is not taken for a
// data plane, whatever its labels are named.
var (
	// storageSuffixes follow <account>.<service>.
	storageSuffixes = [...]string{"core.windows.net", "core.chinacloudapi.cn", "core.usgovcloudapi.net"}
	// vaultSuffixes follow <vault>.vault.
	vaultSuffixes = [...]string{"azure.net", "azure.cn", "usgovcloudapi.net"}
	// hsmSuffixes follow <hsm>.managedhsm. Azure operated by 21Vianet
	// documents managedhsm.chinacloudapi.cn; the SDKs' China cloud
	// settings name managedhsm.azure.cn: both are read.
	hsmSuffixes = [...]string{"azure.net", "azure.cn", "chinacloudapi.cn", "usgovcloudapi.net"}
)

// A plane is a data plane whose hosts are <resource>.<label>.<suffix>: a
// resource that counts its requests against limits of its own, named by
// the host's first label.
type plane struct {
	label    string   // the host's second label
	suffixes []string // what follows the label, one per cloud
	service  string   // the scope's service
}

// planes are the data planes ScopeOfURL reads besides storage, key vaults
// and managed HSMs, with the suffixes of Azure's clouds (public, China, US
// Government) as Microsoft's documentation ("Azure Private Endpoint
// private DNS zone values", "Compare Azure Government and global Azure")
// and the Azure SDKs' cloud settings name them.
var planes = [...]plane{
	// Cosmos DB's NoSQL API, its dedicated gateway (the integrated
	// cache's) and its Table API: request units per account.
	{"documents", []string{"azure.com", "azure.cn", "azure.us"}, ServiceCosmosDB},
	{"sqlx", []string{"cosmos.azure.com", "cosmos.azure.cn", "cosmos.azure.us"}, ServiceCosmosDB},
	{"table", []string{"cosmos.azure.com", "cosmos.azure.cn", "cosmos.azure.us"}, ServiceCosmosDB},
	// Service Bus and Event Hubs namespaces: credits, throughput or
	// messaging units per namespace.
	{"servicebus", []string{"windows.net", "chinacloudapi.cn", "usgovcloudapi.net"}, ServiceMessaging},
	// App Configuration: requests per store.
	{"azconfig", []string{"io", "azure.cn", "azure.us"}, ServiceAppConfig},
	// Azure AI services accounts, whose Azure OpenAI endpoint and Foundry
	// endpoint are other hosts of the same account.
	{"cognitiveservices", []string{"azure.com", "azure.cn", "azure.us"}, ServiceAIServices},
	{"openai", []string{"azure.com", "azure.cn", "azure.us"}, ServiceAIServices},
	{"services", []string{"ai.azure.com", "ai.azure.cn", "ai.azure.us"}, ServiceAIServices},
	// Container Registry: operations per registry.
	{"azurecr", acrSuffixes, ServiceContainerRegistry},
	// Web PubSub: units per service.
	{"webpubsub", []string{"azure.com", "azure.cn", "azure.us"}, ServiceWebPubSub},
}

// eventGridSuffixes follow eventgrid in the hosts of Event Grid topics,
// domains and namespaces, <name>.<region>-1.eventgrid.<suffix>.
var eventGridSuffixes = []string{"azure.net", "azure.cn", "azure.us"}

// eventGrid returns the region of a host <name>.<label>.<rest> of an Event
// Grid topic, domain or namespace, whose label is <region>-<n> (n digits;
// Event Grid's hosts read -1) and rest eventgrid.<suffix> for a suffix of
// eventGridSuffixes: a resource whose name is unique within its region
// only, and whose publishing limits are its own.
func eventGrid(label, rest string) (region string, ok bool) {
	svc, rest, _ := strings.Cut(rest, ".")
	if !strings.EqualFold(svc, "eventgrid") || !oneOf(rest, eventGridSuffixes) {
		return "", false
	}
	i := strings.LastIndexByte(label, '-')
	if i <= 0 || i == len(label)-1 {
		return "", false
	}
	for j := i + 1; j < len(label); j++ {
		if label[j] < '0' || label[j] > '9' {
			return "", false
		}
	}
	return label[:i], true
}

// acrSuffixes follow azurecr in a container registry's hosts: its login
// server, <registry>.azurecr.<suffix>, and its dedicated data endpoints,
// <registry>.<region>.data.azurecr.<suffix>.
var acrSuffixes = []string{"io", "cn", "us"}

// registryData reports whether a host <registry>.<region>.<rest> is a
// container registry's dedicated data endpoint, whose rest is
// data.azurecr.<suffix> for a suffix of acrSuffixes: the host from which
// the registry in a region serves its layers' blobs.
func registryData(region, rest string) bool {
	data, rest, _ := strings.Cut(rest, ".")
	label, rest, _ := strings.Cut(rest, ".")
	return region != "" && strings.EqualFold(data, "data") &&
		strings.EqualFold(label, "azurecr") && oneOf(rest, acrSuffixes)
}

// otherPlane returns the scope of a host of one of planes: name, its first
// label, label, its second, and rest, what follows.
func otherPlane(name, label, rest string) (resilience.Scope, bool) {
	for i := range planes {
		if p := &planes[i]; strings.EqualFold(label, p.label) && oneOf(rest, p.suffixes) {
			return dataPlane(name, p.service), true
		}
	}
	return resilience.Scope{}, false
}

// oneOf reports whether s is one of suffixes, ignoring case.
func oneOf(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.EqualFold(s, x) {
			return true
		}
	}
	return false
}

// ScopeOfURL returns the scope of a request's URL. A data-plane host of
// one of Azure's clouds (public, China, US Government) names the
// resource whose limits the request counts against, and its scope has
// that resource as its account, since it has no subscription in its URL:
//
//   - a storage account's, <account>.<service>.<suffix> for a service of
//     blob, queue, table, file and dfs and a suffix of core.windows.net,
//     core.chinacloudapi.cn and core.usgovcloudapi.net, or, for an account
//     made with Azure DNS zone endpoints,
//     <account>.z<00-99>.<service>.storage.azure.net (a -secondary
//     account is the account): azure/<account>/*/<service>;
//   - a key vault's, <vault>.vault.<suffix> for a suffix of azure.net,
//     azure.cn and usgovcloudapi.net: azure/<vault>/*/keyvault;
//   - a managed HSM's, <hsm>.managedhsm.<suffix> for a suffix of
//     azure.net, azure.cn, chinacloudapi.cn and usgovcloudapi.net:
//     azure/<hsm>/*/managedhsm;
//   - a Cosmos DB account's, <account>.documents.<suffix>, its dedicated
//     gateway's <account>.sqlx.cosmos.<suffix> or its Table API's
//     <account>.table.cosmos.<suffix> for a suffix of azure.com, azure.cn
//     and azure.us: azure/<account>/*/cosmosdb, the first label whole.
//     A regional endpoint (<account>-<location name>.documents.<suffix>,
//     or whatever host the account's properties name) cannot be told by
//     its name from an account named so (orders-eastus2 is a legal
//     name): the policies govern an azcosmos request in the scope of its
//     client's endpoint, which the per-call policy reads before azcosmos
//     sends the attempts to regional endpoints; the per-retry policy
//     alone, or a client made on a regional endpoint, governs them in
//     the regional host's scope, one of its own;
//   - a Service Bus or Event Hubs namespace's,
//     <namespace>.servicebus.<suffix> for a suffix of windows.net,
//     chinacloudapi.cn and usgovcloudapi.net: azure/<namespace>/*/messaging;
//   - an App Configuration store's, <store>.azconfig.<suffix> for a suffix
//     of io, azure.cn and azure.us: azure/<store>/*/appconfig;
//   - an Azure AI services account's, Azure OpenAI's included,
//     <account>.cognitiveservices.<suffix>, <account>.openai.<suffix> or
//     <account>.services.ai.<suffix> (its Foundry endpoint) for a suffix
//     of azure.com, azure.cn and azure.us: azure/<account>/*/aiservices;
//   - a container registry's, <registry>.azurecr.<suffix>, or one of its
//     dedicated data endpoints, <registry>.<region>.data.azurecr.<suffix>,
//     for a suffix of io, cn and us: azure/<registry>/*/acr;
//   - an Event Grid topic's, domain's or namespace's,
//     <name>.<region>-1.eventgrid.<suffix> for a suffix of azure.net,
//     azure.cn and azure.us: azure/<name>.<region>/<region>/eventgrid,
//     the region in the account as well as the scope's, since such a
//     name is unique within its region only (orders in westus2 and
//     orders in eastus are two topics, with an account each);
//   - a Web PubSub service's, <name>.webpubsub.<suffix> for a suffix of
//     azure.com, azure.cn and azure.us: azure/<name>/*/webpubsub.
//
// Any other host is Resource Manager's (or a host it cannot tell from it,
// such as a test server's, a region's shared endpoint such as
// westus.api.cognitive.microsoft.com, or a user's own host whose labels
// happen to read vault, blob.core or documents.azure, such as
// foo.vault.example.com or foo.documents.azure.com.example.org): the
// scope of the URL's path, as ScopeOf reads it. A host's final dot is ignored and
// its labels match case-insensitively; the names are lower-cased. The
// policies of ClientOptions and Policies resolve every request's scope
// with it, but for a request azcosmos made (it carries the header
// x-ms-cosmos-sdk-supportedcapabilities) on a host of no Cosmos DB
// account's (the emulator's, https://localhost:8081, or a host of one's
// own): its endpoint's, azure/<host name>/*/cosmosdb, or
// azure/<host name>:<port>/*/cosmosdb when the URL names a port other
// than its scheme's default (two emulators on one host, localhost:8081
// and localhost:8082, are two endpoints); and for a request a data
// plane's SDK made (its User-Agent names azblob, azqueue, aztables,
// azfile, azdatalake, azsecrets, azkeys, azcertificates, azappconfig,
// azsbadmin or azcontainerregistry, as azcore's telemetry policy writes
// it) on a host of no data plane's (Azurite's,
// http://127.0.0.1:10000/devstoreaccount1, a Key Vault or App
// Configuration emulator's, https://localhost:8443,
// http://localhost:8483, or a custom domain's): its endpoint's likewise,
// and the SDK's service, blob, queue, table, file, dfs, keyvault,
// appconfig, messaging or acr (azure/127.0.0.1:10000/*/blob,
// azure/localhost:8443/*/keyvault), rather than
// Resource Manager's tenant-level scope (a scheduler that declares such a
// request's scope declares that one). They govern a tenant-level request (its scope has no account,
// and it is no Resource Graph query) whose bearer token is a JWT naming
// its tenant in that tenant's account, tenants/<tenant id> (lower-cased),
// since Resource Manager throttles each tenant apart, and Resource Graph
// each tenant's users: a Resource Graph query whose token names its
// tenant goes in azure/tenants/<tenant id>/*/resourcegraph, one whose
// token names none in GraphScope. The tenant is in no URL, and a
// scheduler that declares such a request's scope puts it in ScopeOfURL's.
//
// A part read from the URL (a host's label, a path's segment, unescaped)
// that holds a character that is not printable (a newline, %0A; a byte
// that is not UTF-8), a space, or more than 128 bytes gives the part's
// fallback, so that a request's text reaches no log line or metric label
// as it is and makes no scope without bound: no account
// (https://%FF.vault.azure.net is azure/*/*/keyvault), no region, and for
// a namespace resources (see ScopeOf).
func ScopeOfURL(u *url.URL) resilience.Scope {
	if sc, ok := hostScope(u); ok {
		return sc
	}
	return scopeOfPath(u)
}

// hostScope returns the scope of a URL whose host is a data plane's that
// ScopeOfURL reads, and whether it is one.
func hostScope(u *url.URL) (resilience.Scope, bool) {
	host := strings.TrimSuffix(u.Hostname(), ".")
	name, rest, ok := strings.Cut(host, ".")
	if !ok || name == "" {
		return resilience.Scope{}, false
	}
	svc, rest, _ := strings.Cut(rest, ".")
	switch {
	case strings.EqualFold(svc, "vault") && oneOf(rest, vaultSuffixes[:]):
		return dataPlane(name, ServiceKeyVault), true
	case strings.EqualFold(svc, "managedhsm") && oneOf(rest, hsmSuffixes[:]):
		return dataPlane(name, ServiceManagedHSM), true
	case oneOf(rest, storageSuffixes[:]):
		if sc, ok := storagePlane(name, svc); ok {
			return sc, true
		}
	case dnsZone(svc):
		// An Azure DNS zone endpoint: <account>.z<NN>.<service>.storage.azure.net.
		if svc, rest, _ := strings.Cut(rest, "."); strings.EqualFold(rest, dnsZoneSuffix) {
			if sc, ok := storagePlane(name, svc); ok {
				return sc, true
			}
		}
	case registryData(svc, rest):
		return dataPlane(name, ServiceContainerRegistry), true
	default:
		if region, ok := eventGrid(svc, rest); ok {
			// <name>.<region>, a substring of host: the name is unique
			// within its region only.
			sc := dataPlane(host[:len(name)+1+len(region)], ServiceEventGrid)
			sc.Region = plainLower(region)
			return sc, true
		}
		if sc, ok := otherPlane(name, svc, rest); ok {
			return sc, true
		}
	}
	return resilience.Scope{}, false
}

// requestScope returns the scope the policies give a request, raw, and
// whether azcosmos made it (fromAzcosmos): ScopeOfURL's, but for a
// request of a data plane's SDK on a host ScopeOfURL does not read as
// that data plane's, whose path it would read as Resource Manager's:
//
//   - azcosmos's on a host of no Cosmos DB account's (the emulator's,
//     https://localhost:8081, or a host of one's own in front of an
//     account): its endpoint's, azure/<endpoint>/*/cosmosdb, as a Cosmos
//     DB account's host names the account;
//   - a data plane's SDK's (sdkService: a Storage SDK's, azblob's,
//     azqueue's, aztables's, azfile's or azdatalake's, a Key Vault SDK's,
//     azsecrets's, azkeys's or azcertificates's, azappconfig's, Service
//     Bus's administration client's or azcontainerregistry's, as its
//     User-Agent names it) on a host of no data plane's (Azurite's,
//     http://127.0.0.1:10000/devstoreaccount1, a Key Vault emulator's,
//     https://localhost:8443, App Configuration's emulator's,
//     http://localhost:8483, or a custom domain's): its endpoint's, and
//     the service of the SDK's clients, azure/<endpoint>/*/<service>
//     (blob, queue, table, file, dfs, keyvault, appconfig, messaging,
//     acr), as a storage account's host (<account>.blob.core.windows.net)
//     names the account and the service, and a vault's, a store's, a
//     namespace's or a registry's host the resource. A client reaches an account's
//     private endpoint by the account's host, which its private DNS zone
//     resolves to the endpoint's address, and is in the account's scope;
//     the account's privatelink host
//     (<account>.privatelink.blob.core.windows.net), which the account's
//     TLS certificate does not name, is a host of no data plane's.
//
// The endpoint is the host name lower-cased, with the URL's port when it
// names one other than its scheme's default (azure/localhost:8081/*/cosmosdb,
// azure/127.0.0.1:10000/*/blob), since two emulators on one host
// (localhost:8081, localhost:8082) are two endpoints; an IPv6 host is
// bracketed, with a port or without ([::1]:8081, [::1]). The account an
// emulator's path-style URL names (devstoreaccount1, its first segment)
// is not read: on a custom domain that segment is a container, and an
// emulator's accounts are one process's. ScopeOfURL would put these
// requests in azure/*/*/resources (a tenant-level request's scope), where
// their throttling and failures would halve and pause the tenant-level
// Resource Manager calls, and open their breaker.
func requestScope(raw *http.Request) (resilience.Scope, bool) {
	sc, ok := hostScope(raw.URL)
	if fromAzcosmos(raw.Header) {
		if sc.Service == ServiceCosmosDB {
			return sc, true
		}
		if ep := scopekey.Endpoint(raw.URL.Host, raw.URL.Scheme); ep != "" {
			return dataPlane(ep, ServiceCosmosDB), true
		}
		return ScopeOfURL(raw.URL), true
	}
	if ok {
		return sc, false
	}
	if svc := sdkService(raw.Header[hdrUserAgent]); svc != "" {
		if ep := scopekey.Endpoint(raw.URL.Host, raw.URL.Scheme); ep != "" {
			return dataPlane(ep, svc), false
		}
	}
	return scopeOfPath(raw.URL), false
}

// hdrUserAgent is the User-Agent header, in canonical form.
const hdrUserAgent = "User-Agent"

// sdkServices are the data planes' SDKs whose clients may be pointed at a
// host of no data plane's (an emulator's, a host of one's own), by the
// name azcore's telemetry policy gives their module in a request's
// User-Agent (azsdk-go-<name>/<version>: the module path's last element,
// which the SDKs pass without their major version, azappconfig/v2 as
// azappconfig), and the service of their clients' requests, the one
// ScopeOfURL gives the data plane's hosts: the Storage SDKs' the second
// label of a storage account's hosts (<account>.<service>.core.windows.net),
// the Key Vault SDKs' keyvault, App Configuration's appconfig, Service
// Bus's administration client's (azservicebus/admin, whose pipeline azcore
// names azsbadmin) messaging and Container Registry's acr.
var sdkServices = [...]struct{ name, service string }{
	{"azblob", "blob"},
	{"azqueue", "queue"},
	{"aztables", "table"},
	{"azfile", "file"},
	{"azdatalake", "dfs"},
	{"azsecrets", ServiceKeyVault},
	{"azkeys", ServiceKeyVault},
	{"azcertificates", ServiceKeyVault},
	{"azappconfig", ServiceAppConfig},
	{"azsbadmin", ServiceMessaging},
	{"azcontainerregistry", ServiceContainerRegistry},
}

// telemetryPrefix begins the token azcore's telemetry policy writes in a
// request's User-Agent for the SDK whose pipeline sends it:
// azsdk-go-<module>/<version>, first or after the application's id and a
// space, and followed by a space and the platform's, (<go version>; <os>).
const telemetryPrefix = "azsdk-go-"

// sdkService returns the service of the SDK (sdkServices) whose token
// azcore's telemetry policy wrote in a request's User-Agent:
// [<application id> ]azsdk-go-<module>/<version> (<go version>; <os>),
// and after it any User-Agent the request had. The token is the word the
// platform's follows, the value's first or second ("blob" for
// azsdk-go-azblob/v1.6.4 (go1.26; linux), "keyvault" for
// myapp azsdk-go-azsecrets/v1.5.0 (go1.26; linux)): the application's id,
// which azcore writes without spaces (its spaces made slashes), names no
// SDK, whatever it reads (azsdk-go-scanner, or azsdk-go-azblob/1 before
// a Resource Manager client's token). "" when that token names another
// SDK's module, or no module by itself (azsdk-go-v2, what azcore writes
// for a module passed with its major version), or no such token begins
// the value (a client whose telemetry is disabled). A token later in the
// value, in a User-Agent the request had, which azcore keeps after its
// own, is not read.
func sdkService(ua []string) string {
	if len(ua) == 0 {
		return ""
	}
	v := ua[0]
	for range 2 { // the SDK's token, or the application's id before it
		word, rest, _ := strings.Cut(v, " ")
		if strings.HasPrefix(rest, "(") { // the platform's follows the SDK's token
			tok, ok := strings.CutPrefix(word, telemetryPrefix)
			name, _, slash := strings.Cut(tok, "/")
			if ok && slash {
				for _, s := range sdkServices {
					if name == s.name {
						return s.service
					}
				}
			}
			return ""
		}
		v = rest
	}
	return ""
}

// dnsZoneSuffix follows <account>.z<NN>.<service> in the hosts of a
// storage account made with Azure DNS zone endpoints.
const dnsZoneSuffix = "storage.azure.net"

// dnsZone reports whether label is the zone label of an Azure DNS zone
// endpoint, z00 to z99 (either case).
func dnsZone(label string) bool {
	return len(label) == 3 && (label[0] == 'z' || label[0] == 'Z') &&
		'0' <= label[1] && label[1] <= '9' && '0' <= label[2] && label[2] <= '9'
}

// storagePlane returns the scope of a storage account's data plane, the
// account name and the service label of one of its hosts, when the label
// is a storage service's (a -secondary account is the account).
func storagePlane(name, svc string) (resilience.Scope, bool) {
	for _, s := range storageServices {
		if strings.EqualFold(svc, s) {
			if n := len(name) - len("-secondary"); n > 0 && strings.EqualFold(name[n:], "-secondary") {
				name = name[:n]
			}
			return dataPlane(name, s), true
		}
	}
	return resilience.Scope{}, false
}

// tenantPrefix begins the account of a tenant's tenant-level requests,
// tenants/<tenant id> (see tenantScope), as GCP's accounts name their kind
// of resource (projects/<id>).
const tenantPrefix = "tenants/"

// tenantScope returns the scope of a tenant-level request (sc, ScopeOfURL's
// scope, with no account) whose bearer token names its tenant: Resource
// Manager throttles a tenant's requests per tenant, so that one tenant's
// throttle or spent bucket must not hold another's. account is the
// tenant's, tenants/<tenant id> (tenantAccount). A Resource Graph query
// is one too: its quota is its user's, a principal of the tenant the
// token names, and Resource Manager's tenant buckets its answer reports
// are that tenant's, so that it goes in
// azure/tenants/<tenant id>/*/resourcegraph. A token that names no tenant
// (account "") keeps sc.
func tenantScope(sc resilience.Scope, account string) resilience.Scope {
	if account == "" || sc.Account != "" {
		return sc
	}
	sc.Account = account
	return sc
}

// tenantAccount returns the account of the tenant-level requests of the
// tenant an Authorization header's bearer token names (tenantOf),
// tenants/<tenant id>, or "" when it names none.
func tenantAccount(authorization string) string {
	if tid := tenantOf(authorization); tid != "" {
		return tenantPrefix + tid
	}
	return ""
}

// tenantOf returns the tenant a bearer token was issued in, lower-cased:
// the tid claim of a JWT's payload, read without checking the token's
// signature (the token is the one the request is sent with, and the
// tenant only names its scope). "" when authorization is no bearer JWT,
// or its tid is no GUID.
func tenantOf(authorization string) string {
	tok, ok := strings.CutPrefix(authorization, "Bearer ")
	if !ok {
		return ""
	}
	_, rest, ok := strings.Cut(tok, ".")
	if !ok {
		return ""
	}
	payload, _, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(payload, "="))
	if err != nil {
		return ""
	}
	var claims struct {
		Tid string `json:"tid"`
	}
	if json.Unmarshal(b, &claims) != nil || !isGUID(claims.Tid) {
		return ""
	}
	return strings.ToLower(claims.Tid)
}

// isGUID reports whether s is a GUID in its 8-4-4-4-12 hexadecimal form.
func isGUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// dataPlane is the scope of a data-plane resource's requests.
func dataPlane(resource, service string) resilience.Scope {
	return resilience.Scope{Provider: Provider, Account: plainLower(resource), Service: service}
}

// GraphScope returns Resource Graph's scope, azure/*/*/resourcegraph: no
// subscription, since its quota follows the caller, not the subscription.
// The policies and QueryResources govern a query in it when its bearer
// token names no tenant; a query whose token names its tenant goes in
// that tenant's account, azure/tenants/<tenant id>/*/resourcegraph (see
// ScopeOfURL), since the quota is a user's of that tenant.
func GraphScope() resilience.Scope {
	return resilience.Scope{Provider: Provider, Service: ServiceResourceGraph}
}

// ScopeOf returns the scope of an ARM request path (the URL's Path, without
// the query): the subscription id, lower-cased, and the namespace of the
// last providers/Microsoft.<Namespace> pair without "Microsoft.",
// lower-cased ("resources" when there is none). Only a segment that
// follows a providers segment names a namespace: a resource group or a
// resource named Microsoft.<something> (the portal names its deployments
// Microsoft.Template-<time>) does not. Resource Graph paths map to
// GraphScope. Segment names match case-insensitively, as ARM's do. A
// subscription or a namespace that holds a character that is not
// printable (a newline, a byte that is not UTF-8), a space, or more than
// 128 bytes is none: no account, and the service resources. ScopeOfURL
// reads the path as it was sent, each segment unescaped on its own: a
// subscription or a namespace that holds a slash sent escaped (%2F) is
// none too, and a resource group's name so sent
// (rg%2Fproviders%2FMicrosoft.Evil) names no namespace.
//
//	/subscriptions/0B1F.../resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v
//	  -> azure/0b1f.../*/network
//
// It does not allocate for lower-case subscription ids and for the
// namespaces it has seen before.
func ScopeOf(path string) resilience.Scope {
	return scopeOf(path, false)
}

// scopeOfPath returns ScopeOf's scope of u's path read as it was sent:
// each segment of the escaped path unescaped on its own, so that a slash
// sent escaped (/subscriptions/<id>%2Fx) is part of its segment, not a
// boundary that would name subscription <id>. A path that Go writes as
// it is (no RawPath: no %2F in it) is ScopeOf's of u.Path, which
// allocates nothing.
func scopeOfPath(u *url.URL) resilience.Scope {
	if u.RawPath == "" {
		return ScopeOf(u.Path)
	}
	return scopeOf(u.EscapedPath(), true)
}

// scopeOf is ScopeOf's reading of path, the escaped path when escaped is
// set: its segments are unescaped then, each on its own.
func scopeOf(path string, escaped bool) resilience.Scope {
	var sub, ns string
	wantSub, afterProviders := false, false
	for i := 0; i < len(path); {
		if path[i] == '/' {
			i++
			continue
		}
		j := i
		for j < len(path) && path[j] != '/' {
			j++
		}
		seg := path[i:j]
		i = j
		if escaped && strings.IndexByte(seg, '%') >= 0 {
			if v, err := url.PathUnescape(seg); err == nil {
				seg = v
			}
		}
		namespace := afterProviders
		afterProviders = len(seg) == len("providers") && strings.EqualFold(seg, "providers")
		switch {
		case wantSub:
			sub, wantSub = seg, false
		case sub == "" && len(seg) == len("subscriptions") && strings.EqualFold(seg, "subscriptions"):
			wantSub = true
		case namespace && len(seg) > len("microsoft.") && strings.EqualFold(seg[:len("microsoft.")], "microsoft."):
			ns = seg[len("microsoft."):]
		}
	}
	// A subscription or a namespace holds no slash: one sent escaped in
	// a segment (%2F) makes it none.
	if strings.IndexByte(sub, '/') >= 0 {
		sub = ""
	}
	if ns != "" && strings.IndexByte(ns, '/') < 0 {
		ns = plainLower(ns)
	} else {
		ns = ""
	}
	if ns == "" {
		return resilience.Scope{Provider: Provider, Account: plainLower(sub), Service: ServiceResources}
	}
	if ns == ServiceResourceGraph {
		return GraphScope()
	}
	return resilience.Scope{Provider: Provider, Account: plainLower(sub), Service: ns}
}

// plainLower returns a part read from a URL (a host's label, a path's
// segment) in lower case, or "" when it is not plain (scopekey.Plain: a
// character that is not printable, a newline or a byte that is not
// UTF-8, a space, or more than scopekey.MaxPlain bytes), so that a
// request's text reaches no log line or metric label as it is, and makes
// no scope without bound. A long part is not lower-cased, nor cached.
func plainLower(s string) string {
	if !scopekey.Plain(s) {
		return ""
	}
	if s = lower(s); !scopekey.Plain(s) {
		return ""
	}
	return s
}

// lower returns s in lower case. Strings already in lower case come back
// as they are; others are looked up in a small read-mostly cache, so the
// namespaces (Network, Compute) and the subscriptions a process sees are
// lower-cased once.
func lower(s string) string {
	if !hasUpper(s) {
		return s
	}
	if v, ok := lowerCache.Load(s); ok {
		return v
	}
	return addLower(s)
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' || c >= 0x80 {
			return true
		}
	}
	return false
}

// maxLowerCache bounds the cache: past it, lower-casing allocates.
const maxLowerCache = 1024

// lowerCache maps strings to their lower-case form. It is a copy-on-write
// map: written at most maxLowerCache times, read on every call.
var lowerCache cowmap.Map[string, string]

// addLower lower-cases s and caches it while the cache has room (callers
// racing past the check may add a few more).
func addLower(s string) string {
	v := strings.ToLower(s)
	if lowerCache.Len() < maxLowerCache {
		lowerCache.LoadOrStore(strings.Clone(s), func() string { return v })
	}
	return v
}
